package vector

import (
	"errors"
	"slices"
	"testing"
)

func TestSet(t *testing.T) {
	s := NewSet(Options{})
	if s.Get("a") != nil || s.Search("a", []float32{1, 0}, 3) != nil {
		t.Fatal("unknown collection has an index")
	}
	s.Delete("a", 1) // no-op, creates nothing
	if len(s.Collections()) != 0 {
		t.Fatal("Delete created a collection")
	}

	a := randomVectors(20, 8, 1)
	b := randomVectors(20, 16, 2) // another model, another dimension
	for i := range a {
		if err := s.Add("a", int64(i), a[i]); err != nil {
			t.Fatal(err)
		}
		if err := s.Add("b", int64(100+i), b[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("a", 1, b[0]); !errors.Is(err, ErrDimension) {
		t.Fatalf("Add of a 16-dim vector to an 8-dim collection: %v", err)
	}
	if err := s.Add("c", 1, nil); !errors.Is(err, ErrDimension) {
		t.Fatalf("Add of an empty vector: %v", err)
	}
	if got := s.Collections(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Collections = %v", got)
	}
	for _, h := range s.Search("a", a[3], 50) {
		if h.ID >= 100 {
			t.Fatalf("collection a returned b's id %d", h.ID)
		}
	}
	if got := s.Search("b", b[4], 1); len(got) != 1 || got[0].ID != 104 {
		t.Fatalf("Search b = %v", got)
	}
	s.Delete("b", 104)
	if got := s.Search("b", b[4], 1); got[0].ID == 104 {
		t.Fatal("deleted id returned")
	}
	if s.Get("a").Dim() != 8 || s.Get("b").Len() != 19 {
		t.Fatal("wrong index behind a collection")
	}

	s.Drop("a")
	if s.Get("a") != nil || s.Search("a", a[3], 5) != nil {
		t.Fatal("dropped collection still searchable")
	}
	x := New(8, Options{})
	x.Add(9, a[0])
	s.Put("a", x)
	if got := s.Search("a", a[0], 5); len(got) != 1 || got[0].ID != 9 {
		t.Fatalf("Search after Put = %v", got)
	}
}
