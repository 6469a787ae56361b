package console

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 9999: "9,999", 12345: "12.3 k", 123456: "123 k", 1234567: "1.2 M", 12345678: "12 M"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for ms, want := range map[float64]string{0: "0 ms", 850: "850 ms", 12400: "12.4 s", 200000: "3 min 20 s"} {
		if got := duration(ms); got != want {
			t.Errorf("duration(%v) = %q, want %q", ms, got, want)
		}
	}
}
