package store_test

import (
	"testing"

	"github.com/agenthost/agenthost/host/store/storetest"
)

// startPostgres starts a PostgreSQL server of its own and returns its
// URL (storetest.Postgres).
func startPostgres(t *testing.T) string { return storetest.Postgres(t) }

// createDatabase creates the database name on the server of url and
// returns its URL.
func createDatabase(t *testing.T, url, name string) string {
	return storetest.CreateDatabase(t, url, name)
}
