package charts_test

import "os/exec"

// execCommand runs external tools (the pinned helm binary).
var execCommand = exec.Command
