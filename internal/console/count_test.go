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

func TestLabelAndSize(t *testing.T) {
	for in, want := range map[string]string{"tokens_per_second": "Tokens per second", "ttft_ms": "TTFT", "queue_wait_ms": "Queue wait", "requests": "Requests"} {
		if got := label(in); got != want {
			t.Errorf("label(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{512: "512 bytes", 380_000_000: "380 MB", 1_234_000_000: "1.2 GB"} {
		if got := size(in); got != want {
			t.Errorf("size(%d) = %q, want %q", in, got, want)
		}
	}
}
