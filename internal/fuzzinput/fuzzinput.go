// Package fuzzinput turns the bytes of a Go fuzz target into the structured values its test builds an object from:
// small counts, choices among interesting values, numbers and short strings. The fuzzer mutates the bytes, and
// coverage guides it to the choices that reach new code; an object built this way always decodes, which random
// JSON would almost never do. When the bytes run out every value is zero, so any input is a complete object.
package fuzzinput

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Source hands out values read from the fuzzer's bytes, front to back.
type Source struct {
	data []byte
}

// New reads values from data.
func New(data []byte) *Source { return &Source{data: data} }

// Byte is the next byte, or 0 once the bytes are used up.
func (s *Source) Byte() byte {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return b
}

// Bool is true for an odd byte.
func (s *Source) Bool() bool { return s.Byte()&1 == 1 }

// Intn is a number from 0 to n-1 (0 when n <= 0).
func (s *Source) Intn(n int) int {
	if n <= 0 {
		return 0
	}
	return int(s.Byte()) % n
}

// Int32 is any int32, the bounds and their neighbours included.
func (s *Source) Int32() int32 {
	var b [4]byte
	for i := range b {
		b[i] = s.Byte()
	}
	return int32(binary.LittleEndian.Uint32(b[:]))
}

// SmallInt is a number from -2 to n, more often in range than Int32's, for counts and indices compared with others.
func (s *Source) SmallInt(n int) int { return s.Intn(n+3) - 2 }

// Pick is one of choices.
func (s *Source) Pick(choices ...string) string {
	if len(choices) == 0 {
		return ""
	}
	return choices[s.Intn(len(choices))]
}

// String is a string of up to maxLen bytes taken as they come (not necessarily UTF-8).
func (s *Source) String(maxLen int) string {
	n := s.Intn(maxLen + 1)
	if n > len(s.data) {
		n = len(s.data)
	}
	out := string(s.data[:n])
	s.data = s.data[n:]
	return out
}

// Word is one of choices or, one time in four, a string of its own, so that both the values a rule names and the
// ones nobody thought of are tried.
func (s *Source) Word(choices ...string) string {
	if s.Intn(4) == 0 {
		return s.String(16)
	}
	return s.Pick(choices...)
}

// IntOrString is nil, a number or a string: percentages in and out of 0%..100%, and strings of its own.
func (s *Source) IntOrString() *intstr.IntOrString {
	switch s.Intn(4) {
	case 0:
		return nil
	case 1:
		v := intstr.FromInt32(int32(s.SmallInt(12)))
		if s.Intn(8) == 0 {
			v = intstr.FromInt32(s.Int32())
		}
		return &v
	case 2:
		v := intstr.FromString(strconv.Itoa(s.SmallInt(110)) + "%")
		return &v
	default:
		v := intstr.FromString(s.Word("0%", "100%", "101%", "50%", "05%", "+5%", "-1%", "1", "%", "", "1.5%", " 5%"))
		return &v
	}
}

// Quantity is a resource quantity: small and huge, negative, zero, with the suffixes of CPU and memory.
func (s *Source) Quantity() resource.Quantity {
	forms := []string{"0", "1", "100m", "250m", "1500m", "2", "64Mi", "1Gi", "1.5Gi", "1e3", "9223372036854775807",
		"-1", "-100m", "1Ei", "999Ei", "1n", "0.1", "123456789012345678901234567890"}
	text := s.Pick(forms...)
	if s.Intn(3) == 0 {
		text = fmt.Sprintf("%d%s", s.Int32(), s.Pick("", "m", "k", "Mi", "Gi", "Ki", "n", "u", "M", "G", "T", "Ti", "E"))
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}
