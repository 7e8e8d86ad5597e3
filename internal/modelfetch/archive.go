package modelfetch

import (
	"strings"
)

// archiveKind says how a downloaded file is unpacked, by its name: .tar, .tar.gz or .tgz, .zip; anything else is
// the model itself and is stored as it is.
func archiveKind(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return "tar.gz"
	case strings.HasSuffix(n, ".tar"):
		return "tar"
	case strings.HasSuffix(n, ".zip"):
		return "zip"
	}
	return ""
}
