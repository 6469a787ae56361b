package vector

import (
	"cmp"
	"math"
	"slices"
)

// Distances inside the graph are negated inner products of normalised
// vectors (smaller is closer), so a similarity is just -distance.

// item is a node with its distance to the vector being searched for.
type item struct {
	d float32
	n uint32
}

func byDist(a, b item) int { return cmp.Compare(a.d, b.d) }

// minHeap is a binary min-heap of items by d.
type minHeap []item

func (h *minHeap) push(x item) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].d <= s[i].d {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *minHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.fix0()
	return top
}

// fix0 restores the heap after s[0] changed.
func (h minHeap) fix0() {
	for i := 0; ; {
		m := i
		if l := 2*i + 1; l < len(h) && h[l].d < h[m].d {
			m = l
		}
		if r := 2*i + 2; r < len(h) && h[r].d < h[m].d {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// searcher is the scratch space of one search or insertion, pooled per
// index so that concurrent searches do not share it.
type searcher struct {
	mark []uint32 // node → generation in which it was visited
	gen  uint32
	cand minHeap // candidates to expand, nearest first
	res  minHeap // results with negated distances: the root is the farthest
	sel  []item
	out  []item
	tmp  []item
	tmp2 []item
}

// begin starts a search over a graph of n nodes: nothing visited, no
// candidates, no results.
func (s *searcher) begin(n int) {
	if len(s.mark) < n {
		s.mark = make([]uint32, n+n/2+64)
		s.gen = 0
	}
	s.gen++
	if s.gen == 0 {
		clear(s.mark)
		s.gen = 1
	}
	s.cand = s.cand[:0]
	s.res = s.res[:0]
}

// visit marks n visited and reports whether it was not visited before.
func (s *searcher) visit(n uint32) bool {
	if s.mark[n] == s.gen {
		return false
	}
	s.mark[n] = s.gen
	return true
}

// drain empties the results into buf, nearest first, with true distances.
func (s *searcher) drain(buf []item) []item {
	k := len(s.res)
	buf = slices.Grow(buf[:0], k)[:k]
	for i := k - 1; i >= 0; i-- {
		it := s.res.pop()
		buf[i] = item{-it.d, it.n}
	}
	return buf
}

func (x *Index) vector(n uint32) []float32 {
	b := int(n) * x.dim
	return x.vecs[b : b+x.dim : b+x.dim]
}

func (x *Index) dist(q []float32, n uint32) float32 { return -dot(q, x.vector(n)) }

// slot is node n's link slot on layer l: a count, then up to m0 (layer 0)
// or m (above) neighbours.
func (x *Index) slot(n uint32, l int) []uint32 {
	if l == 0 {
		b := int(n) * (x.m0 + 1)
		return x.links0[b : b+x.m0+1 : b+x.m0+1]
	}
	b := (l - 1) * (x.m + 1)
	return x.upper[n][b : b+x.m+1 : b+x.m+1]
}

func (x *Index) links(n uint32, l int) []uint32 {
	s := x.slot(n, l)
	return s[1 : 1+s[0]]
}

func (x *Index) setLinks(n uint32, l int, its []item) {
	s := x.slot(n, l)
	s[0] = uint32(len(its))
	for i, it := range its {
		s[1+i] = it.n
	}
}

func (x *Index) level(n uint32) int { return len(x.upper[n]) / (x.m + 1) }

// randomLevel draws a new node's top layer: P(level ≥ l) = M^-l.
func (x *Index) randomLevel() int {
	u := 1 - x.rng.Float64() // (0, 1]
	return min(int(-math.Log(u)*x.ml), maxLevel)
}

// kill turns node n into a tombstone.
func (x *Index) kill(n uint32) {
	x.dead[n] = true
	delete(x.byID, x.ids[n])
	x.ndead++
}

// insert appends a node for id with vector v*inv at the given level and
// links it into the graph.
func (x *Index) insert(s *searcher, id int64, v []float32, inv float32, level int) {
	n := uint32(len(x.ids))
	for _, f := range v {
		x.vecs = append(x.vecs, f*inv)
	}
	x.ids = append(x.ids, id)
	x.dead = append(x.dead, false)
	x.links0 = append(x.links0, make([]uint32, x.m0+1)...)
	var up []uint32
	if level > 0 {
		up = make([]uint32, level*(x.m+1))
	}
	x.upper = append(x.upper, up)
	x.byID[id] = n
	x.connect(s, n, level)
}

// connect links the new node n, whose top layer is level, into the graph
// (the paper's INSERT).
func (x *Index) connect(s *searcher, n uint32, level int) {
	if len(x.ids) == 1 {
		x.entry, x.top = n, level
		return
	}
	q := x.vector(n)
	ep := x.entry
	epD := x.dist(q, ep)
	for l := x.top; l > level; l-- {
		ep, epD = x.greedy(q, ep, epD, l)
	}
	for l := min(level, x.top); l >= 0; l-- {
		s.begin(len(x.ids))
		x.searchLayer(s, q, ep, epD, x.efConstruction, l, true)
		s.sel = s.drain(s.sel)
		ep, epD = s.sel[0].n, s.sel[0].d
		s.out = x.selectNeighbors(s.sel, x.m, s.out)
		x.setLinks(n, l, s.out)
		for _, c := range s.out {
			x.addLink(s, c.n, n, c.d, l)
		}
	}
	if level > x.top {
		x.entry, x.top = n, level
	}
}

// addLink adds a link from node to n (at distance d) on layer l, pruning
// node's links with the heuristic if that overflows them.
func (x *Index) addLink(s *searcher, node, n uint32, d float32, l int) {
	limit := x.m
	if l == 0 {
		limit = x.m0
	}
	sl := x.slot(node, l)
	if c := int(sl[0]); c < limit {
		sl[1+c] = n
		sl[0]++
		return
	}
	v := x.vector(node)
	s.tmp = s.tmp[:0]
	for _, c := range x.links(node, l) {
		s.tmp = append(s.tmp, item{x.dist(v, c), c})
	}
	s.tmp = append(s.tmp, item{d, n})
	slices.SortFunc(s.tmp, byDist)
	s.tmp2 = x.selectNeighbors(s.tmp, limit, s.tmp2)
	x.setLinks(node, l, s.tmp2)
}

// selectNeighbors picks at most limit of the candidates c (sorted nearest
// first) with the paper's heuristic: a candidate is kept only if it is
// nearer to the base than to every candidate already kept, which spreads
// links over directions instead of spending them all on one cluster.
// Tombstones are passed over unless no candidate is live.
func (x *Index) selectNeighbors(c []item, limit int, out []item) []item {
	out = out[:0]
	live := false
	for _, it := range c {
		if !x.dead[it.n] {
			live = true
			break
		}
	}
	if len(c) <= limit {
		for _, it := range c {
			if !live || !x.dead[it.n] {
				out = append(out, it)
			}
		}
		return out
	}
	for _, it := range c {
		if len(out) >= limit {
			break
		}
		if live && x.dead[it.n] {
			continue
		}
		v := x.vector(it.n)
		good := true
		for _, o := range out {
			if x.dist(v, o.n) < it.d {
				good = false
				break
			}
		}
		if good {
			out = append(out, it)
		}
	}
	return out
}

// greedy walks layer l from ep to the node nearest q that has no nearer
// neighbour.
func (x *Index) greedy(q []float32, ep uint32, epD float32, l int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		for _, nb := range x.links(ep, l) {
			if d := x.dist(q, nb); d < epD {
				ep, epD, changed = nb, d, true
			}
		}
	}
	return ep, epD
}

// searchLayer is the paper's SEARCH-LAYER: a best-first search of layer l
// from ep that leaves the ef nearest nodes found in s.res. Tombstones are
// walked through but only enter the results if all is set (when building,
// where they still count as graph structure).
func (x *Index) searchLayer(s *searcher, q []float32, ep uint32, epD float32, ef, l int, all bool) {
	s.visit(ep)
	s.cand.push(item{epD, ep})
	if all || !x.dead[ep] {
		s.res.push(item{-epD, ep})
	}
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if len(s.res) >= ef && c.d > -s.res[0].d {
			break
		}
		for _, nb := range x.links(c.n, l) {
			if !s.visit(nb) {
				continue
			}
			d := x.dist(q, nb)
			if len(s.res) < ef || d < -s.res[0].d {
				s.cand.push(item{d, nb})
				if all || !x.dead[nb] {
					s.res.push(item{-d, nb})
					if len(s.res) > ef {
						s.res.pop()
					}
				}
			}
		}
	}
	s.cand = s.cand[:0]
}

// search is the paper's K-NN-SEARCH.
func (x *Index) search(s *searcher, q []float32, k, ef int) []Hit {
	ep := x.entry
	epD := x.dist(q, ep)
	for l := x.top; l > 0; l-- {
		ep, epD = x.greedy(q, ep, epD, l)
	}
	s.begin(len(x.ids))
	x.searchLayer(s, q, ep, epD, ef, 0, false)
	return x.hits(s, k)
}

// maybeRebuild sweeps the tombstones by rebuilding the graph from the live
// vectors once they are outnumbered, which keeps searches from wading
// through the dead; each deletion pays for about one insertion over time.
func (x *Index) maybeRebuild(s *searcher) {
	live := len(x.byID)
	if live == 0 {
		x.graph = newGraph(x.m, x.efConstruction)
		return
	}
	if x.ndead <= live {
		return
	}
	old := x.graph
	x.graph = newGraph(old.m, old.efConstruction)
	x.vecs = make([]float32, 0, live*x.dim)
	x.ids = make([]int64, 0, live)
	x.dead = make([]bool, 0, live)
	x.links0 = make([]uint32, 0, live*(x.m0+1))
	x.upper = make([][]uint32, 0, live)
	for n := range old.ids {
		if old.dead[n] {
			continue
		}
		b := n * x.dim
		x.insert(s, old.ids[n], old.vecs[b:b+x.dim], 1, len(old.upper[n])/(old.m+1))
	}
}
