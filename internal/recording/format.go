package recording

import (
	"math"
	"strconv"
	"time"
)

// Number formatting for the hot path. Everything appends to a caller's
// buffer and allocates nothing.

// sigDigits is how many significant digits values keep. Nine digits are more
// than any counter rate is accurate to and keep lines short.
const sigDigits = 9

// appendValue appends v as a JSON value: null for NaN and ±Inf (JSON has no
// such numbers); an integral v below 1e15 in magnitude exactly, as an integer
// (byte counts and page counts stay exact); anything else as the shortest
// decimal of v rounded to nine significant digits, as an integer when that
// rounding is integral and below 1e15, with an exponent only below 1e-4 or
// from 1e15 up.
func appendValue(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	// Integers: gauges in bytes or pages, and most counter rates.
	if v == math.Trunc(v) && v > -1e15 && v < 1e15 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	// Let strconv round to nine significant digits in exponent form
	// ("-d.dddddddde±XX"), then rewrite that in place.
	mark := len(dst)
	dst = strconv.AppendFloat(dst, v, 'e', sigDigits-1, 64)
	s := dst[mark:]
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var digits [sigDigits]byte
	nd := 0
	i := 0
	for ; i < len(s) && s[i] != 'e'; i++ {
		if s[i] != '.' {
			if nd < len(digits) {
				digits[nd] = s[i]
				nd++
			}
		}
	}
	exp := 0
	esign := 1
	i++ // 'e'
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		if s[i] == '-' {
			esign = -1
		}
		i++
	}
	for ; i < len(s); i++ {
		exp = exp*10 + int(s[i]-'0')
	}
	exp *= esign
	for nd > 1 && digits[nd-1] == '0' {
		nd--
	}
	dst = dst[:mark]
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case exp >= 15 || exp < -4:
		dst = append(dst, digits[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:nd]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		}
		dst = strconv.AppendInt(dst, int64(exp), 10)
	case exp >= 0:
		// Integer part: digits[0..exp], padded with zeros.
		for k := 0; k <= exp; k++ {
			if k < nd {
				dst = append(dst, digits[k])
			} else {
				dst = append(dst, '0')
			}
		}
		if nd > exp+1 {
			dst = append(dst, '.')
			dst = append(dst, digits[exp+1:nd]...)
		}
	default: // -4 <= exp < 0
		dst = append(dst, '0', '.')
		for k := exp + 1; k < 0; k++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits[:nd]...)
	}
	if len(dst) == mark+2 && dst[mark] == '-' && dst[mark+1] == '0' {
		dst = append(dst[:mark], '0') // no "-0"
	}
	return dst
}

// appendSeconds appends d as seconds with microsecond resolution: at most six
// decimals, trailing zeros (and a bare ".") dropped.
func appendSeconds(dst []byte, d time.Duration) []byte {
	us := int64(d.Round(time.Microsecond) / time.Microsecond)
	if us < 0 {
		dst = append(dst, '-')
		us = -us
	}
	dst = strconv.AppendInt(dst, us/1e6, 10)
	frac := us % 1e6
	if frac == 0 {
		return dst
	}
	var b [7]byte
	b[0] = '.'
	for k := 6; k >= 1; k-- {
		b[k] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for b[n-1] == '0' {
		n--
	}
	return append(dst, b[:n]...)
}

// appendFullValue appends v for CSV: integers below 1e15 as integers, other
// values as the shortest decimal that reads back as v; empty for NaN/Inf.
func appendFullValue(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dst
	}
	if v == math.Trunc(v) && v > -1e15 && v < 1e15 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// appendSecondsFloat appends a time in seconds (as read back) with
// microsecond resolution, like appendSeconds, while it fits a Duration
// (about 292 years); beyond, the shortest decimal that reads back as t:
// plain while that is short, with an exponent from 1e15 on (a time of 1e300
// is "1e+300", not 301 digits).
func appendSecondsFloat(dst []byte, t float64) []byte {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return dst
	}
	switch a := math.Abs(t); {
	case a < 9e9: // t*1e9 ns fits an int64 Duration
		return appendSeconds(dst, time.Duration(math.Round(t*1e6))*time.Microsecond)
	case a < 1e15:
		return strconv.AppendFloat(dst, t, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, t, 'g', -1, 64)
}
