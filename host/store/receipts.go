package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/agenthost/agenthost/host/receipt"
)

// receiptPage is how many receipts or signatures one query of a walk
// reads: a walk holds one page, whatever the chain's length, and no
// cursor stays open between pages (SQLite has one connection).
const receiptPage = 512

// AppendReceipts links rs into their tenants' chains in order (setting
// Seq, Prev and Hash) and stores them with their arguments and recorded
// inputs, in one transaction. Servers sharing a PostgreSQL database
// append to one chain per tenant: each transaction holds the tenant's
// advisory lock while it reads the head and writes after it, and the
// primary key (tenant, seq) refuses a second receipt at one seq should
// anything else write. A transaction that fails is tried again.
func (s *Store) AppendReceipts(ctx context.Context, rs []*receipt.Receipt) error {
	if len(rs) == 0 {
		return nil
	}
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(attempt*attempt) * 20 * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("store: receipts: %w", ctx.Err())
			}
		}
		if err = s.appendReceipts(ctx, rs); err == nil {
			return nil
		}
	}
	return fmt.Errorf("store: receipts: %w", err)
}

func (s *Store) appendReceipts(ctx context.Context, rs []*receipt.Receipt) error {
	var tenants []string
	for _, r := range rs {
		if r.Tenant == "" {
			return errors.New("a receipt without a tenant")
		}
		if !slices.Contains(tenants, r.Tenant) {
			tenants = append(tenants, r.Tenant)
		}
	}
	// Locks are taken in one order by every server: no deadlock.
	slices.Sort(tenants)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	type headOf struct {
		seq  uint64
		hash string
	}
	heads := make(map[string]*headOf, len(tenants))
	for _, t := range tenants {
		if s.postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7316285, hashtext($1))`, t); err != nil {
				return err
			}
		}
		h := &headOf{}
		var seq int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT seq, hash FROM receipts WHERE tenant = ? ORDER BY seq DESC LIMIT 1`), t).Scan(&seq, &h.hash)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		h.seq = uint64(seq)
		heads[t] = h
	}
	// One statement prepared for the batch, executed per receipt: the
	// database parses it once.
	ins, err := tx.PrepareContext(ctx, s.q(`INSERT INTO receipts (tenant, seq, hash, prev, call_id, record, args, inputs) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, r := range rs {
		h := heads[r.Tenant]
		r.Link(h.seq+1, h.hash)
		h.seq, h.hash = r.Seq, r.Hash
		if _, err := ins.ExecContext(ctx, r.Tenant, int64(r.Seq), r.Hash, r.Prev, r.CallID, string(r.Encode()), nullText(r.Args), nullText(r.Inputs)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func nullText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// AddReceiptSignature stores a signature of a chain head. A head already
// signed (by another server, at the same seq) keeps its first signature.
func (s *Store) AddReceiptSignature(ctx context.Context, sig *receipt.Signature) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO receipt_signatures (tenant, seq, hash, at, signature) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, seq) DO NOTHING`),
		sig.Tenant, int64(sig.Seq), sig.Hash, sig.At, sig.Signature)
	if err != nil {
		return fmt.Errorf("store: receipt signature: %w", err)
	}
	return nil
}

// ReceiptTenants lists the tenants that have receipts or signatures,
// sorted: a tenant whose receipts were all deleted is still listed by
// its signatures, and verifies as cut short.
func (s *Store) ReceiptTenants(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT tenant FROM receipts UNION SELECT tenant FROM receipt_signatures ORDER BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

const receiptColumns = `seq, hash, prev, record, args, inputs`

// scanReceipt reads a row of receiptColumns. The columns win over the
// record: a row whose seq, hash or prev columns were changed yields a
// receipt that no longer matches its hash. A record that is not a
// receipt is a *receipt.DecodeError.
func scanReceipt(rows interface{ Scan(...any) error }) (*receipt.Receipt, error) {
	var seq int64
	var hash, prev, rec string
	var args, inputs sql.NullString
	if err := rows.Scan(&seq, &hash, &prev, &rec, &args, &inputs); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	r, err := receipt.Parse([]byte(rec))
	if err != nil {
		return nil, &receipt.DecodeError{Seq: uint64(seq), Err: err}
	}
	r.Seq, r.Hash, r.Prev = uint64(seq), hash, prev
	if args.Valid {
		r.Args = []byte(args.String)
	}
	if inputs.Valid {
		r.Inputs = []byte(inputs.String)
	}
	return r, nil
}

// Receipts walks tenant's receipts from seq since (inclusive) in order,
// with their arguments and recorded inputs, one page at a time.
func (s *Store) Receipts(ctx context.Context, tenant string, since uint64) iter.Seq2[*receipt.Receipt, error] {
	return func(yield func(*receipt.Receipt, error) bool) {
		from := int64(since)
		for {
			rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+receiptColumns+` FROM receipts WHERE tenant = ? AND seq >= ? ORDER BY seq LIMIT ?`), tenant, from, receiptPage)
			if err != nil {
				yield(nil, fmt.Errorf("store: %w", err))
				return
			}
			page := make([]*receipt.Receipt, 0, receiptPage)
			var perr error
			for rows.Next() {
				r, err := scanReceipt(rows)
				if err != nil {
					var de *receipt.DecodeError
					if !errors.As(err, &de) {
						perr = err
						break
					}
					// Yield what came before the bad record, then the error.
					rows.Close()
					for _, r := range page {
						if !yield(r, nil) {
							return
						}
					}
					yield(nil, err)
					return
				}
				page = append(page, r)
			}
			if err := errors.Join(perr, rows.Err(), rows.Close()); err != nil {
				yield(nil, fmt.Errorf("store: %w", err))
				return
			}
			for _, r := range page {
				if !yield(r, nil) {
					return
				}
			}
			if len(page) < receiptPage {
				return
			}
			from = int64(page[len(page)-1].Seq) + 1
		}
	}
}

// ReceiptSignatures walks tenant's head signatures from seq since
// (inclusive) in seq order, one page at a time.
func (s *Store) ReceiptSignatures(ctx context.Context, tenant string, since uint64) iter.Seq2[*receipt.Signature, error] {
	return func(yield func(*receipt.Signature, error) bool) {
		from := int64(since)
		for {
			rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, hash, at, signature FROM receipt_signatures WHERE tenant = ? AND seq >= ? ORDER BY seq LIMIT ?`), tenant, from, receiptPage)
			if err != nil {
				yield(nil, fmt.Errorf("store: %w", err))
				return
			}
			page := make([]*receipt.Signature, 0, receiptPage)
			for rows.Next() {
				sig := &receipt.Signature{Tenant: tenant}
				var seq int64
				if err := rows.Scan(&seq, &sig.Hash, &sig.At, &sig.Signature); err != nil {
					rows.Close()
					yield(nil, fmt.Errorf("store: %w", err))
					return
				}
				sig.Seq = uint64(seq)
				page = append(page, sig)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				yield(nil, fmt.Errorf("store: %w", err))
				return
			}
			for _, sig := range page {
				if !yield(sig, nil) {
					return
				}
			}
			if len(page) < receiptPage {
				return
			}
			from = int64(page[len(page)-1].Seq) + 1
		}
	}
}

// Receipt returns tenant's receipt seq with its arguments and recorded
// inputs (what replay runs again), or ErrNotFound.
func (s *Store) Receipt(ctx context.Context, tenant string, seq uint64) (*receipt.Receipt, error) {
	return s.oneReceipt(ctx, `tenant = ? AND seq = ?`, tenant, int64(seq))
}

// ReceiptByCall returns tenant's receipt of the call callID, or
// ErrNotFound.
func (s *Store) ReceiptByCall(ctx context.Context, tenant, callID string) (*receipt.Receipt, error) {
	return s.oneReceipt(ctx, `tenant = ? AND call_id = ?`, tenant, callID)
}

func (s *Store) oneReceipt(ctx context.Context, where string, args ...any) (*receipt.Receipt, error) {
	r, err := scanReceipt(s.db.QueryRowContext(ctx, s.q(`SELECT `+receiptColumns+` FROM receipts WHERE `+where+` ORDER BY seq LIMIT 1`), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return r, err
}

// VerifyReceipts walks tenant's chain and its signatures end to end (see
// receipt.Verify), a page at a time.
func (s *Store) VerifyReceipts(ctx context.Context, tenant string, trust receipt.Trust) (receipt.Report, error) {
	return receipt.Verify(tenant, s.Receipts(ctx, tenant, 0), s.ReceiptSignatures(ctx, tenant, 0), trust)
}
