package console

import (
	"fmt"
	"net/http"
	"strings"
)

// maxSource bounds a source pasted in the debug page.
const maxSource = 1 << 20

// formSource is the posted source with the line ends the user typed: a
// browser submits a textarea's lines ended by CRLF (HTML's form encoding),
// which a tool's file MUST NOT get.
func formSource(r *http.Request) string {
	return strings.ReplaceAll(r.PostFormValue("source"), "\r\n", "\n")
}

// debugView is the debug page's data: the run, the source in the editor
// and, after a replay, what it found.
type debugView struct {
	Run    RunDetail
	Source string
	Mode   ReplaySource
	Result *ReplayResult
	Saved  *SaveResult
	Error  string
}

func (s *Server) debugPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.b.Run(r.Context(), sessionOf(r.Context()).who, r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "debug.html", debugView{Run: d, Source: d.Source, Mode: ReplayEdited})
}

// replay replays the run with the posted mode and source and shows the
// debug page with what it found.
func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	who := sessionOf(r.Context()).who
	d, err := s.b.Run(r.Context(), who, r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	mode := ReplaySource(r.PostFormValue("mode"))
	src := formSource(r)
	v := debugView{Run: d, Source: src, Mode: mode}
	if v.Source == "" {
		v.Source = d.Source
	}
	switch {
	case mode != ReplayRecorded && mode != ReplayCurrent && mode != ReplayEdited:
		s.failErr(w, r, fmt.Errorf("%w: replay mode %q: choose recorded, current or edited", ErrBadInput, mode))
		return
	case len(src) > maxSource:
		s.failErr(w, r, fmt.Errorf("%w: the source is over %d bytes", ErrBadInput, maxSource))
		return
	}
	req := ReplayRequest{Run: d.ID, Mode: mode}
	if mode == ReplayEdited {
		req.Source = []byte(src)
	}
	res, err := s.b.Replay(r.Context(), who, req)
	code := http.StatusOK
	if err != nil {
		v.Error = err.Error()
		code = statusOf(err)
	} else {
		v.Result = &res
	}
	s.render(w, r, code, "debug.html", v)
}

// saveFix writes the posted source as the run's tool's new version.
func (s *Server) saveFix(w http.ResponseWriter, r *http.Request) {
	who := sessionOf(r.Context()).who
	d, err := s.b.Run(r.Context(), who, r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	src := formSource(r)
	v := debugView{Run: d, Source: src, Mode: ReplayEdited}
	code := http.StatusOK
	switch {
	case src == "":
		v.Error, code = "paste the fixed source before saving it", http.StatusBadRequest
	case len(src) > maxSource:
		v.Error, code = fmt.Sprintf("the source is over %d bytes", maxSource), http.StatusBadRequest
	case d.Tool == "":
		v.Error, code = "this run has no tool to save a version of", http.StatusBadRequest
	default:
		res, err := s.b.SaveSource(r.Context(), who, d.Tool, []byte(src))
		if err != nil {
			v.Error, code = err.Error(), statusOf(err)
		} else {
			v.Saved = &res
		}
	}
	s.render(w, r, code, "debug.html", v)
}
