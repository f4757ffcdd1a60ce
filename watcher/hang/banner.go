package hang

import (
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// hostBanner is a launcher's line naming the host of the next matched
// line of the same reader's same stream (joblog.KindHostBanner: MPICH
// Hydra's "=   PID P RUNNING AT HOST" before "=   EXIT CODE: 9").
type hostBanner struct {
	host, reader, stream string
	at                   time.Time
}

// bannerSpan bounds the time from a banner to the line it places: the
// launcher prints them together.
const bannerSpan = 5 * time.Second

// places says b names the host of s, a matched line that names none.
func (b hostBanner) places(s trace.Sample) bool {
	return b.host != "" && b.reader == s.Host && b.stream == s.Log.Stream && !s.Time.Before(b.at) && s.Time.Sub(b.at) <= bannerSpan
}

// placeLine is the host a line of the job's output names
// (joblog.Attribute), else the host a launcher's banner just before it
// named; "" when neither.
func (j *jobTrack) placeLine(s trace.Sample) string {
	if from := joblog.Attribute(s.Log.Line, j.attribution()).Host; from != "" {
		return from
	}
	if j.banner.places(s) {
		return j.banner.host
	}
	return ""
}

// takeBanner keeps s when it is a launcher's banner (m's kind) and says
// so; any other matched line ends the banner's turn: it places the next
// matched line only.
func (j *jobTrack) takeBanner(s trace.Sample, m joblog.Match) bool {
	if m.Kind == joblog.KindHostBanner {
		j.banner = hostBanner{host: j.attribution().Node(m.Peer), reader: s.Host, stream: s.Log.Stream, at: s.Time}
		return true
	}
	j.banner = hostBanner{}
	return false
}
