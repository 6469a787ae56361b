package records

import (
	"context"
	"crypto"
	_ "crypto/sha256" // the hash the RFC 6962 hasher uses
	"encoding/hex"
	"fmt"

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
	var leaves [][]byte
	index := int64(-1)
	var bad error
	err := s.ChainRecords(ctx, 0, func(r Record) bool {
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
	rf := &compact.RangeFactory{Hash: Hasher.HashChildren}
	r := rf.NewEmptyRange(0)
	var bad error
	err := s.ChainRecords(ctx, 0, func(rec Record) bool {
		h, err := hex.DecodeString(rec.Hash)
		if err == nil {
			err = r.Append(Hasher.HashLeaf(h), nil)
		}
		bad = err
		return err == nil
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return 0, "", err
	}
	if r.End() == 0 {
		return 0, hex.EncodeToString(Hasher.EmptyRoot()), nil
	}
	root, err := r.GetRootHash(nil)
	return r.End(), hex.EncodeToString(root), err
}
