package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages returns the parsed templates: each page file with layout.html.
// They are parsed on first use, not at package init: every agentos
// command links the console, and only a node serving it renders a page
// (parsing them cost `agentos help` 4–34 ms and 0.6 MB of allocations).
var pages = sync.OnceValue(parsePages)

// foldAt is the size past which a payload is folded (<details>).
const foldAt = 400

var funcs = template.FuncMap{
	"json":  prettyJSON,
	"big":   func(b []byte) bool { return len(b) > foldAt },
	"bigs":  func(s string) bool { return len(s) > foldAt },
	"clip":  clip,
	"short": func(s string) string { return clip(s, 12) },
	"when":  func(t time.Time) string { return when(t) },
	"dur":   dur,
	"join":  strings.Join,
	"list":  func(s ...string) []string { return s },
	"kib":   func(n int) string { return strconv.Itoa(n>>10) + " KiB" },
}

func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimPrefix(n, "templates/")
		if base == "layout.html" {
			continue
		}
		out[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return out
}

// view is what every page's template gets: the session's header and the
// page's own data.
type view struct {
	Title string
	Who   *Principal
	CSRF  string
	Nav   string
	Data  any
}

// render writes the page name with data.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	t, ok := pages()[name]
	if !ok {
		http.Error(w, "console: no template "+name, http.StatusInternalServerError)
		return
	}
	v := view{Title: strings.TrimSuffix(name, ".html"), Data: data, Nav: strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]}
	if ss := sessionOf(r.Context()); ss != nil {
		v.Who, v.CSRF = &ss.who, ss.csrf
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		s.log.Error("console: rendering", "page", name, "err", err)
		http.Error(w, "console: rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// errorView is the error page's data.
type errorView struct {
	Code    int
	Message string
}

// fail shows err with code.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	s.render(w, r, code, "error.html", errorView{Code: code, Message: err.Error()})
}

// failErr shows a Backend error with the status its kind calls for.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	s.fail(w, r, statusOf(err), err)
}

// statusOf is the HTTP status of a Backend error.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrDenied):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadInput), errors.Is(err, ErrBadToken):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func staticHandler() http.Handler {
	return http.FileServerFS(staticFS)
}

// prettyJSON indents a JSON value for display (as it is when it is not
// JSON).
func prettyJSON(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
