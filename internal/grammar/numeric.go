package grammar

import (
	"math"
	"strconv"
	"strings"
)

// Numeric ranges. Integers (and the integer part of bounded numbers) are
// written with at most 16 digits, like the unconstrained "integral-part"
// rule; bounds are limited to what float64 represents exactly.

const (
	maxMagnitude = 1<<53 - 1             // largest bound accepted
	maxDigits16  = 9_999_999_999_999_999 // largest 16-digit integer
)

// bound is one side of a numeric range.
type bound struct {
	set  bool
	val  float64
	excl bool
	at   *value
}

// numericBounds reads minimum/maximum and their exclusive forms (both the
// draft 2019+ numeric form and the draft 4 boolean form).
func numericBounds(s *value) (lo, hi bound, err error) {
	read := func(key string) (*value, float64, error) {
		v := s.get(key)
		if v == nil {
			return nil, 0, nil
		}
		if v.kind == kindBool {
			return v, 0, nil
		}
		if v.kind != kindNumber {
			return nil, 0, schemaError(v, "%s must be a number", key)
		}
		f, err := v.num.Float64()
		if err != nil || math.IsInf(f, 0) || math.Abs(f) > maxMagnitude {
			return nil, 0, schemaError(v, "%s is out of the supported range (±%d)", key, int64(maxMagnitude))
		}
		return v, f, nil
	}
	side := func(key, exclKey string, tighter func(a, b float64) bool) (bound, error) {
		var b bound
		v, f, err := read(key)
		if err != nil {
			return b, err
		}
		xv, xf, err := read(exclKey)
		if err != nil {
			return b, err
		}
		if v != nil {
			if v.kind == kindBool {
				return b, schemaError(v, "%s must be a number", key)
			}
			b = bound{set: true, val: f, at: v}
		}
		if xv != nil {
			if xv.kind == kindBool { // draft 4: modifies the plain bound
				if xv.boolean && b.set {
					b.excl = true
				}
			} else if !b.set || tighter(b.val, xf) || b.val == xf {
				b = bound{set: true, val: xf, excl: true, at: xv}
			}
		}
		return b, nil
	}
	lo, err = side("minimum", "exclusiveMinimum", func(a, b float64) bool { return b > a })
	if err != nil {
		return
	}
	hi, err = side("maximum", "exclusiveMaximum", func(a, b float64) bool { return b < a })
	return
}

func (c *converter) integer(s *value) (*expr, error) {
	lo, hi, err := numericBounds(s)
	if err != nil {
		return nil, err
	}
	if !lo.set && !hi.set {
		return c.b.builtin("integer"), nil
	}
	a, b := int64(-maxDigits16), int64(maxDigits16)
	if lo.set {
		if lo.excl {
			a = int64(math.Floor(lo.val)) + 1
		} else {
			a = int64(math.Ceil(lo.val))
		}
	}
	if hi.set {
		if hi.excl {
			b = int64(math.Ceil(hi.val)) - 1
		} else {
			b = int64(math.Floor(hi.val))
		}
	}
	if a > b {
		return nil, schemaError(s, "no integer satisfies the minimum and maximum")
	}
	var alts []*expr
	if a < 0 {
		alts = append(alts, seq(lit("-"), uintRange(uint64(max(-b, 1)), uint64(-a))))
	}
	if b >= 0 {
		alts = append(alts, uintRange(uint64(max(a, 0)), uint64(b)))
	}
	return seq(alt(alts...), c.b.builtin("space")), nil
}

func (c *converter) number(s *value) (*expr, error) {
	lo, hi, err := numericBounds(s)
	if err != nil {
		return nil, err
	}
	if !lo.set && !hi.set {
		return c.b.builtin("number"), nil
	}
	for _, b := range []bound{lo, hi} {
		if b.set && b.val != math.Trunc(b.val) {
			return nil, schemaError(b.at, "non-integer bounds are only supported for type integer")
		}
	}
	var alts []*expr
	// Non-negative values: [max(lo, 0), hi].
	if !hi.set || hi.val > 0 || (hi.val == 0 && !hi.excl) {
		a, aExcl := 0.0, false
		if lo.set && lo.val >= 0 {
			a, aExcl = lo.val, lo.excl
		}
		if e := magnitude(a, aExcl, hi); e != nil {
			alts = append(alts, e)
		}
	}
	// Negative values, as "-" and a magnitude in [max(-hi, 0), -lo].
	if !lo.set || lo.val < 0 {
		a, aExcl := 0.0, true
		if hi.set && hi.val < 0 {
			a, aExcl = -hi.val, hi.excl
		}
		top := bound{}
		if lo.set {
			top = bound{set: true, val: -lo.val, excl: lo.excl}
		}
		if e := magnitude(a, aExcl, top); e != nil {
			alts = append(alts, seq(lit("-"), e))
		}
	}
	if len(alts) == 0 {
		return nil, schemaError(s, "no number satisfies the minimum and maximum")
	}
	return seq(alt(alts...), c.b.builtin("space")), nil
}

// magnitude matches non-negative decimals (no exponent) from a (exclusive
// when aExcl) up to hi. Bounds are whole numbers. It returns nil when the
// range is empty.
func magnitude(a float64, aExcl bool, hi bound) *expr {
	digit := class("[0-9]")
	anyFrac := opt(seq(lit("."), rep(digit, 1, 16)))
	zeroFrac := opt(seq(lit("."), rep(lit("0"), 1, 16)))
	nonzeroFrac := seq(lit("."), rep(lit("0"), 0, 15), class("[1-9]"), rep(digit, 0, 15))
	A := uint64(a)
	var alts []*expr
	// Integer parts followed by any fraction.
	lowAny := A
	if aExcl {
		lowAny = A + 1
	}
	highAny := uint64(maxDigits16)
	if hi.set {
		if hi.val < 1 {
			highAny, lowAny = 0, 1 // empty
		} else {
			highAny = uint64(hi.val) - 1
		}
	}
	if lowAny <= highAny {
		alts = append(alts, seq(uintRange(lowAny, highAny), anyFrac))
	}
	// Exclusive lower bound: A itself with a non-zero fraction.
	if aExcl && (!hi.set || a < hi.val) {
		alts = append(alts, seq(lit(strconv.FormatUint(A, 10)), nonzeroFrac))
	}
	// Inclusive upper bound: B itself with a zero fraction.
	if hi.set && !hi.excl && (hi.val > a || (hi.val == a && !aExcl)) {
		alts = append(alts, seq(lit(strconv.FormatUint(uint64(hi.val), 10)), zeroFrac))
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}

// uintRange matches the decimal (no leading zeros) integers in [a, b].
func uintRange(a, b uint64) *expr {
	sa, sb := strconv.FormatUint(a, 10), strconv.FormatUint(b, 10)
	var alts []*expr
	fullFrom := 0 // first length of a run of lengths covered completely
	flush := func(to int) {
		if fullFrom > 0 {
			alts = append(alts, seq(class("[1-9]"), rep(class("[0-9]"), fullFrom-1, to-1)))
			fullFrom = 0
		}
	}
	for n := len(sa); n <= len(sb); n++ {
		lo, hi := sa, sb
		if n > len(sa) {
			lo = "1" + strings.Repeat("0", n-1)
		}
		if n < len(sb) {
			hi = strings.Repeat("9", n)
		}
		if strings.TrimLeft(lo, "0") == "1"+strings.Repeat("0", n-1) && hi == strings.Repeat("9", n) {
			if fullFrom == 0 {
				fullFrom = n
			}
			continue
		}
		flush(n - 1)
		alts = append(alts, sameLength(lo, hi))
	}
	flush(len(sb))
	return alt(alts...)
}

// sameLength matches the digit strings of len(x) between x and y (x <= y).
func sameLength(x, y string) *expr {
	i := 0
	for i < len(x) && x[i] == y[i] {
		i++
	}
	prefix := lit(x[:i])
	if i == len(x) {
		return prefix
	}
	x, y = x[i:], y[i:]
	rest := len(x) - 1
	if rest == 0 {
		return seq(prefix, digitClass(x[0], y[0]))
	}
	lowAll0 := strings.Trim(x[1:], "0") == ""
	highAll9 := strings.Trim(y[1:], "9") == ""
	var alts []*expr
	from, to := x[0], y[0]
	if !lowAll0 {
		alts = append(alts, seq(lit(x[:1]), sameLength(x[1:], strings.Repeat("9", rest))))
		from++
	}
	if !highAll9 {
		to--
	}
	if from <= to {
		alts = append(alts, seq(digitClass(from, to), rep(class("[0-9]"), rest, rest)))
	}
	if !highAll9 {
		alts = append(alts, seq(lit(y[:1]), sameLength(strings.Repeat("0", rest), y[1:])))
	}
	return seq(prefix, alt(alts...))
}

func digitClass(from, to byte) *expr {
	if from == to {
		return lit(string(from))
	}
	return class("[" + string(from) + "-" + string(to) + "]")
}
