package tangled

func b() int { return 1 }

// B uses a.go.
func B() int { return A() }
