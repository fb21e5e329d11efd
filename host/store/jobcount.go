package store

import (
	"context"
	"fmt"
)

// CountJobs counts the tenant's jobs of origin ("" for all), up to
// limit: a quota's check reads no more rows than the quota.
func (s *Store) CountJobs(ctx context.Context, tenant, origin string, limit int) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE tenant = ? AND (? = '' OR origin = ?) LIMIT ?) AS kept`),
		tenant, origin, origin, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return n, nil
}
