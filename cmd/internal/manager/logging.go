package manager

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// parseLogLevel maps --log-level to a zap level. Names are the usual ones; a number N means logr verbosity N
// (zap level -N), so --log-level=2 also shows the V(2) lines controller-runtime and client-go write.
func parseLogLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info", "":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 127 {
		return 0, fmt.Errorf("%q is not debug, info, error or a verbosity from 0 to 127", s)
	}
	return zapcore.Level(-n), nil
}

// newLogger builds the process logger: zap behind logr, JSON for machines or console for people, writing to w.
// The level was validated by Options.Validate.
func newLogger(level, format string, w io.Writer) logr.Logger {
	lvl, err := parseLogLevel(level)
	if err != nil {
		lvl = zapcore.InfoLevel
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "ts"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if format == "console" {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	core := zapcore.NewCore(enc, zapcore.AddSync(w), zap.NewAtomicLevelAt(lvl))
	return zapr.NewLogger(zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.DPanicLevel)))
}
