package hangview

import "html/template"

// pageTmpl is the page: inline style, no scripts, nothing loaded from
// outside.
var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}{{with .Jobs}}: job {{.}}{{end}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.1em; margin: .2em 0; }
.meta { color: #555; margin: 0 0 1em; }
.digest { border: 2px solid #c0392b; background: #fdf2f1; padding: .6em 1em; margin: .6em 0; }
.digest .cause { font-weight: bold; }
.none { color: #555; }
table { border-collapse: collapse; margin: .6em 0 1.2em; }
td, th { border: 1px solid #ccc; padding: .2em .6em; text-align: left; font-size: .9em; }
tr.culprit td { background: #fde0dc; font-weight: bold; }
.host { border: 1px solid #ccc; padding: .5em 1em; margin: 1em 0; }
.host.culprit { border: 3px solid #c0392b; background: #fff7f6; }
.badge { background: #c0392b; color: #fff; padding: .1em .5em; border-radius: .3em; font-size: .8em; margin-left: .5em; }
.legend span { margin-right: 1.2em; font-size: .85em; }
pre { white-space: pre-wrap; font-size: .85em; margin: .2em 0 .2em 1.5em; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}{{with .Jobs}}: job {{.}}{{end}}</h1>
<p class="meta">window {{.Window}}; charts from {{.From}} to {{.To}}</p>
{{range .Digests}}<section class="digest">
<h2>Digest {{.Time.UTC.Format "2006-01-02T15:04:05Z07:00"}}: <span class="cause">{{.Cause}}</span></h2>
{{if not .Since.IsZero}}<p class="since">hung since {{.Since.UTC.Format "2006-01-02T15:04:05Z07:00"}}</p>
{{end}}<p>{{.Hint}}</p>
{{if .Culprits}}<ul class="culprits">{{range .Culprits}}
<li><a href="#culprit-{{.Host}}">{{.Host}}</a>: {{.Reason}}{{with index .Evidence "lines"}}{{range .}}<pre>{{.}}</pre>{{end}}{{end}}</li>{{end}}
</ul>{{else}}<p class="none">no culprit host named</p>{{end}}
</section>
{{else}}<p class="none nodigest">{{.NoDigest}}</p>
{{end}}<table class="verdicts">
<tr><th>host</th><th>state</th><th>reason</th><th>time</th><th>message</th><th>digest</th></tr>
{{range .Verdicts}}<tr{{if .Culprit}} class="culprit"{{end}}><td>{{.Host}}</td><td>{{.State}}</td><td>{{.Reason}}</td><td>{{.Time}}</td><td>{{.Message}}</td><td>{{.Blame}}</td></tr>
{{end}}</table>
<p class="legend"><span style="color:#e67e22">- - suspect</span><span style="color:#c0392b">| hung</span><span style="color:#27ae60">| recovered</span><span style="background:#fde0dc">shaded: the window before a hung verdict</span></p>
</header>
<main>
{{range .Charts}}<section class="host{{if .Culprit}} culprit{{end}}" id="{{if .Culprit}}culprit-{{.Host}}{{else}}{{.ID}}{{end}}" data-host="{{.Host}}">
<h2>{{.Host}}{{if .Culprit}}<span class="badge">culprit: {{.Reasons}}</span>{{end}}</h2>
{{if .NoData}}<p class="none nodata">No readings of {{.Host}} on this page: the watcher that wrote it did not receive them. The page the job's coordinator wrote has every host's.</p>
{{end}}{{if .NoAccel}}<p class="none noaccel">No accelerator readings of {{.Host}} in this time range: its chart shows I/O and CPU only.</p>
{{end}}{{.SVG}}
</section>
{{end}}</main>
</body>
</html>
`))
