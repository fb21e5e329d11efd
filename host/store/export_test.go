package store

import "context"

// OpenVersion opens the store at path with its first n migrations only:
// a database as an older agenthost left it.
func OpenVersion(ctx context.Context, path string, n int) (*Store, error) {
	return open(ctx, path, n)
}

// Exec runs a statement without arguments (a test's fixture rows).
func (s *Store) Exec(ctx context.Context, query string) error {
	_, err := s.db.ExecContext(ctx, query)
	return err
}
