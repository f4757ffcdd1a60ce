package coord

import (
	"io"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

// sessionLog is the logger the rendezvous session logs to: every entry
// goes on to to at its own level, except that once the watcher shuts down
// (closing, set by Node.Close) a warning becomes a debug line. The
// session's connections then fail because this watcher closes them, or
// because every watcher of the job stops at once ("use of closed network
// connection", a peer's EOF): a normal shutdown leaves no warning.
func sessionLog(to logrus.FieldLogger, closing *atomic.Bool) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.TraceLevel)
	l.AddHook(relayHook{to: to, closing: closing})
	return l
}

// relayHook writes each entry of its logger on to.
type relayHook struct {
	to      logrus.FieldLogger
	closing *atomic.Bool
}

// Levels are all levels.
func (relayHook) Levels() []logrus.Level { return logrus.AllLevels }

// Fire relays e.
func (h relayHook) Fire(e *logrus.Entry) error {
	lvl := e.Level
	if lvl == logrus.WarnLevel && h.closing.Load() {
		lvl = logrus.DebugLevel
	}
	out := h.to.WithFields(e.Data)
	switch lvl {
	case logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel:
		out.Error(e.Message)
	case logrus.WarnLevel:
		out.Warn(e.Message)
	case logrus.InfoLevel:
		out.Info(e.Message)
	default:
		out.Debug(e.Message)
	}
	return nil
}
