package layered

// N is a method in a file above its type's.
func (t T) N() int { return t.n }
