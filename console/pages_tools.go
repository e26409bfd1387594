package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// toolsRoutes are the Tools pages.
func (s *Server) toolsRoutes() []route {
	return []route{
		{"GET /tools", s.page(s.toolsPage)},
		{"GET /tools/{path...}", s.page(s.toolPage)},
	}
}

// toolsView is the registry page's data: a search's hits, or a page of
// the registry by path.
type toolsView struct {
	Query string
	Hits  []ToolHit
	Page  ToolPage
	// Next is the next page's URL ("" on the last).
	Next string
}

// toolsPage is GET /tools[?q=QUERY | ?after=PATH].
func (s *Server) toolsPage(w http.ResponseWriter, r *http.Request) {
	who := sessionOf(r.Context()).who
	v := toolsView{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	var err error
	if v.Query != "" {
		v.Hits, err = s.b.SearchTools(r.Context(), who, v.Query, 50)
	} else {
		v.Page, err = s.b.Tools(r.Context(), who, r.URL.Query().Get("after"), 100)
		if v.Page.Next != "" {
			v.Next = "/tools?after=" + url.QueryEscape(v.Page.Next)
		}
	}
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "tools.html", v)
}

// toolView is a tool's page: the tool, and the version chosen (?version=,
// the current one by default) with its diff and runs.
type toolView struct {
	Tool    ToolDetail
	Version ToolVersionDetail
	// More is the URL of the version's next page of runs.
	More string
}

// toolPage is GET /tools/PATH[?version=HASH&base=HASH&before=RUN].
func (s *Server) toolPage(w http.ResponseWriter, r *http.Request) {
	who := sessionOf(r.Context()).who
	path := r.PathValue("path")
	t, err := s.b.Tool(r.Context(), who, path)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := r.URL.Query()
	v := toolView{Tool: t}
	version := q.Get("version")
	if version == "" && len(t.Versions) > 0 {
		version = t.Versions[0].Hash
	}
	if version != "" {
		limit := 50
		if l := q.Get("limit"); l != "" {
			if limit, err = strconv.Atoi(l); err != nil || limit < 1 {
				s.fail(w, r, http.StatusBadRequest, errBadLimit(l))
				return
			}
		}
		v.Version, err = s.b.ToolVersion(r.Context(), who, t.Path, version, q.Get("base"), q.Get("before"), limit)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		if v.Version.Version.Current {
			v.Version.Check, v.Version.Version.Risk = t.Check, string(t.Check.Risk)
		}
		v.More = moreRuns(t.Path, v.Version, q.Has("limit"), limit)
	}
	s.render(w, r, http.StatusOK, "tool.html", v)
}

// moreRuns is the URL of the next page of d's runs ("" on the last),
// with the page size asked for (sized: a limit was given).
func moreRuns(path string, d ToolVersionDetail, sized bool, limit int) string {
	if d.Next == "" {
		return ""
	}
	next := url.Values{"version": {d.Version.Hash}, "before": {d.Next}}
	if sized {
		next.Set("limit", strconv.Itoa(limit))
	}
	return "/tools/" + path + "?" + next.Encode() + "#runs"
}

// errBadLimit says a limit is not a positive number.
func errBadLimit(l string) error {
	return &inputError{"limit " + strconv.Quote(l) + ": give a positive number of rows"}
}

// inputError is a query the user must correct (wraps ErrBadInput).
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Unwrap() error { return ErrBadInput }

// Class is the CSS class of a diff line.
func (l DiffLine) Class() string {
	switch l.Op {
	case DiffAdd:
		return "add"
	case DiffDel:
		return "del"
	case DiffSkip:
		return "skip"
	}
	return "same"
}

// Sign is the diff line's mark (+, - or a space).
func (l DiffLine) Sign() string {
	if l.Op == DiffSkip {
		return "…"
	}
	return string(rune(l.Op))
}

// Short is a version's hash, shortened for display.
func (v ToolVersion) Short() string { return v.Hash[:min(len(v.Hash), 12)] }
