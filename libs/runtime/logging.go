package runtime

import (
	"errors"
	"io"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger builds the zap logger, wrapped as a logr.Logger, that every
// component logs through. Every line carries component=<component>.
func NewLogger(component string, f *Flags, out io.Writer) (logr.Logger, error) {
	level, err := parseLevel(f.LogLevel)
	if err != nil {
		return logr.Discard(), err
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if f.LogFormat == "console" {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	core := zapcore.NewCore(enc, zapcore.AddSync(out), level)
	z := zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.AddSync(out))).
		With(zap.String("component", component))
	return zapr.NewLogger(z), nil
}

// parseLevel maps --log-level to a zap level. logr's V(n) is zap level -n, so
// a verbosity number n enables V(0)..V(n).
func parseLevel(s string) (zapcore.Level, error) {
	switch s {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 10 {
		return 0, errors.New("must be debug, info, warn, error or a number from 0 to 10")
	}
	return zapcore.Level(-n), nil
}
