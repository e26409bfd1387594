package console

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
)

func newJar() http.CookieJar {
	j, _ := cookiejar.New(nil)
	return j
}

func queryEscape(s string) string { return url.QueryEscape(s) }
