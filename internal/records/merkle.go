package records

import (
	"context"
	"crypto"
	_ "crypto/sha256" // the hash the RFC 6962 hasher uses
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The chain proves that nothing changed; a Merkle tree over it (RFC 6962,
// as Certificate Transparency logs use) proves that one record is in the
// log whose root a party holds, with log(n) hashes rather than the whole
// log. The tree's leaves are the records' hashes in chain order.

// Hasher is the tree's hasher: RFC 6962 over SHA-256.
var Hasher = rfc6962.New(crypto.SHA256)

// Inclusion is a proof that one record is in the tree of the first Size
// records, whose root is Root.
type Inclusion struct {
	Seq       int64    `json:"seq"`
	LeafIndex uint64   `json:"leaf_index"`
	LeafHash  string   `json:"leaf_hash"`
	TreeSize  uint64   `json:"tree_size"`
	Root      string   `json:"root"`
	Proof     []string `json:"proof"`
}

// Prove builds the inclusion proof of the record seq in the tree of every
// record stored now. (It reads the whole chain: fine for an audit, not
// for a hot path.)
func Prove(ctx context.Context, s Store, seq int64) (Inclusion, error) {
	return prove(ctx, s, seq, 0, 0)
}

// prove builds the proof in the tree of the records from..to (to ≤ 0: to
// the end).
func prove(ctx context.Context, s Store, seq, from, to int64) (Inclusion, error) {
	var leaves [][]byte
	index := int64(-1)
	var bad error
	err := s.ChainRecords(ctx, from, func(r Record) bool {
		if to > 0 && r.Seq > to {
			return false
		}
		h, err := hex.DecodeString(r.Hash)
		if err != nil {
			bad = fmt.Errorf("record %d has a malformed hash", r.Seq)
			return false
		}
		if r.Seq == seq {
			index = int64(len(leaves))
		}
		leaves = append(leaves, Hasher.HashLeaf(h))
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return Inclusion{}, err
	}
	if index < 0 {
		return Inclusion{}, ErrNotFound
	}
	p, root, err := inclusion(leaves, uint64(index))
	if err != nil {
		return Inclusion{}, err
	}
	out := Inclusion{Seq: seq, LeafIndex: uint64(index), LeafHash: hex.EncodeToString(leaves[index]), TreeSize: uint64(len(leaves)), Root: hex.EncodeToString(root)}
	for _, h := range p {
		out.Proof = append(out.Proof, hex.EncodeToString(h))
	}
	return out, nil
}

// inclusion computes the proof of leaf index in the tree of leaves (leaf
// hashes) and the tree's root.
func inclusion(leaves [][]byte, index uint64) ([][]byte, []byte, error) {
	size := uint64(len(leaves))
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, nil, err
	}
	want := make(map[compact.NodeID]int, len(nodes.IDs))
	for i, id := range nodes.IDs {
		want[id] = i
	}
	hashes := make([][]byte, len(nodes.IDs))
	visit := func(id compact.NodeID, h []byte) {
		if i, ok := want[id]; ok {
			hashes[i] = h
		}
	}
	rf := &compact.RangeFactory{Hash: Hasher.HashChildren}
	r := rf.NewEmptyRange(0)
	for i, l := range leaves {
		visit(compact.NewNodeID(0, uint64(i)), l)
		if err := r.Append(l, visit); err != nil {
			return nil, nil, err
		}
	}
	root, err := r.GetRootHash(visit)
	if err != nil {
		return nil, nil, err
	}
	p, err := nodes.Rehash(hashes, Hasher.HashChildren)
	return p, root, err
}

// VerifyInclusion checks an inclusion proof against its root.
func VerifyInclusion(in Inclusion) error {
	leaf, err := hex.DecodeString(in.LeafHash)
	if err != nil {
		return err
	}
	root, err := hex.DecodeString(in.Root)
	if err != nil {
		return err
	}
	var p [][]byte
	for _, h := range in.Proof {
		b, err := hex.DecodeString(h)
		if err != nil {
			return err
		}
		p = append(p, b)
	}
	return proof.VerifyInclusion(Hasher, in.LeafIndex, in.TreeSize, leaf, p, root)
}

// Checkpoint is the tree of every record stored now: its size and root
// (hex), which a party can keep and later check proofs against.
func Checkpoint(ctx context.Context, s Store) (uint64, string, error) {
	c, err := treeOf(ctx, s, 0, 0)
	return c.Size, c.Root, err
}

// StoredCheckpoint is a checkpoint kept in the database: the root of the
// tree of the records FirstSeq..LastSeq (Size of them).
type StoredCheckpoint struct {
	ID        int64     `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	FirstSeq  int64     `json:"first_seq"`
	LastSeq   int64     `json:"last_seq"`
	Size      uint64    `json:"size"`
	Root      string    `json:"root"`
}

// CheckpointStore keeps checkpoints.
type CheckpointStore interface {
	Store
	// AddCheckpoint stores c and sets its ID.
	AddCheckpoint(ctx context.Context, c *StoredCheckpoint) error
	// ListCheckpoints returns the newest checkpoints first, at most limit.
	ListCheckpoints(ctx context.Context, limit int) ([]StoredCheckpoint, error)
	// GetCheckpoint returns checkpoint id (ErrNotFound).
	GetCheckpoint(ctx context.Context, id int64) (StoredCheckpoint, error)
}

// treeOf computes the root of the records from..to (to ≤ 0: to the end)
// and the range it covered.
func treeOf(ctx context.Context, s Store, from, to int64) (StoredCheckpoint, error) {
	rf := &compact.RangeFactory{Hash: Hasher.HashChildren}
	r := rf.NewEmptyRange(0)
	var c StoredCheckpoint
	var bad error
	err := s.ChainRecords(ctx, from, func(rec Record) bool {
		if to > 0 && rec.Seq > to {
			return false
		}
		h, err := hex.DecodeString(rec.Hash)
		if err == nil {
			err = r.Append(Hasher.HashLeaf(h), nil)
		}
		if c.FirstSeq == 0 {
			c.FirstSeq = rec.Seq
		}
		c.LastSeq = rec.Seq
		bad = err
		return err == nil
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return c, err
	}
	c.Size = r.End()
	if c.Size == 0 {
		c.Root = hex.EncodeToString(Hasher.EmptyRoot())
		return c, nil
	}
	root, err := r.GetRootHash(nil)
	c.Root = hex.EncodeToString(root)
	return c, err
}

// TakeCheckpoint stores the checkpoint of every record stored now, unless
// the newest stored checkpoint already ends at the last record (another
// replica took it). It returns the checkpoint and whether it stored one.
func TakeCheckpoint(ctx context.Context, s CheckpointStore, now time.Time) (StoredCheckpoint, bool, error) {
	c, err := treeOf(ctx, s, 0, 0)
	if err != nil || c.Size == 0 {
		return c, false, err
	}
	if last, err := s.ListCheckpoints(ctx, 1); err != nil {
		return c, false, err
	} else if len(last) == 1 && last[0].LastSeq == c.LastSeq && last[0].FirstSeq == c.FirstSeq {
		return last[0], false, nil
	}
	c.CreatedAt = now.UTC().Truncate(time.Microsecond)
	return c, true, s.AddCheckpoint(ctx, &c)
}

// CheckpointBreak is a stored checkpoint the records no longer match.
type CheckpointBreak struct {
	Checkpoint StoredCheckpoint
	Root       string
}

func (b *CheckpointBreak) Error() string {
	return fmt.Sprintf("checkpoint %d (records %d–%d, taken %s) has root %.16s…, the records now give %.16s…: records it covers were changed",
		b.Checkpoint.ID, b.Checkpoint.FirstSeq, b.Checkpoint.LastSeq, b.Checkpoint.CreatedAt.Format(time.RFC3339), b.Checkpoint.Root, b.Root)
}

// VerifyCheckpoints recomputes every stored checkpoint (up to limit,
// newest first) whose records are all still kept, and returns how many it
// verified, how many retention overtook, and the first that no longer
// matches. This catches a chain rewritten consistently, which Verify
// alone cannot.
func VerifyCheckpoints(ctx context.Context, s CheckpointStore, limit int) (verified, overtaken int, br *CheckpointBreak, err error) {
	cs, err := s.ListCheckpoints(ctx, limit)
	if err != nil {
		return 0, 0, nil, err
	}
	a, err := s.Anchor(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	for _, c := range cs {
		if c.FirstSeq <= a.Seq {
			overtaken++
			continue
		}
		got, err := treeOf(ctx, s, c.FirstSeq, c.LastSeq)
		if err != nil {
			return verified, overtaken, nil, err
		}
		if got.Root != c.Root || got.Size != c.Size || got.FirstSeq != c.FirstSeq || got.LastSeq != c.LastSeq {
			return verified, overtaken, &CheckpointBreak{Checkpoint: c, Root: got.Root}, nil
		}
		verified++
	}
	return verified, overtaken, nil, nil
}

// ProveIn builds the inclusion proof of record seq in a stored
// checkpoint's tree (ErrNotFound when the record is outside it).
func ProveIn(ctx context.Context, s Store, c StoredCheckpoint, seq int64) (Inclusion, error) {
	if seq < c.FirstSeq || seq > c.LastSeq {
		return Inclusion{}, ErrNotFound
	}
	return prove(ctx, s, seq, c.FirstSeq, c.LastSeq)
}

// Checkpointer stores a checkpoint every Interval.
type Checkpointer struct {
	Store    CheckpointStore
	Interval time.Duration
	Log      *slog.Logger
}

// Run takes checkpoints until ctx ends.
func (c *Checkpointer) Run(ctx context.Context) {
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cp, stored, err := TakeCheckpoint(ctx, c.Store, time.Now())
			switch {
			case err != nil && ctx.Err() == nil:
				c.Log.Warn("request log: taking a checkpoint", "err", err)
			case stored:
				c.Log.Info("request log checkpoint", "id", cp.ID, "records", cp.Size, "last_seq", cp.LastSeq, "root", cp.Root)
			}
		}
	}
}
