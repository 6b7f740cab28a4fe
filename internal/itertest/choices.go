package itertest

// Intner is the source of choices of a randomized test: a *rand.Rand, or
// a ByteSource when fuzzing.
type Intner interface{ IntN(n int) int }

// ByteSource turns fuzz input into choices. Once the bytes run out, every
// choice is 0, so any input describes a finite test.
type ByteSource struct{ b []byte }

// NewByteSource returns the choices that fuzz input b describes.
func NewByteSource(b []byte) *ByteSource { return &ByteSource{b} }

// IntN returns the next choice, in [0, n).
func (s *ByteSource) IntN(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}
