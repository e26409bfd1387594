// Package console tests the web console against a real node: HTTP on
// loopback, and a real browser (headless Chromium driven by chromedp)
// for the pages a user clicks through.
package console
