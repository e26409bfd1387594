package host

import (
	"context"
	"log/slog"
	"time"
)

// RetainEvery is how often a running runtime applies the journal's
// retention (Config.Retention), besides once at start.
var RetainEvery = time.Hour

// startRetention applies the retention now, after recovery (the runs it
// resumed have ended), then every RetainEvery until Close.
func (rt *Runtime) startRetention() {
	rt.retain()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rt.stopRetention = func() { cancel(); <-done }
	every := RetainEvery
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				rt.retain()
			}
		}
	}()
}

// retain prunes the journal as configured, and logs what went.
func (rt *Runtime) retain() {
	rep, err := rt.j.Prune(rt.cfg.PruneOptions())
	if err != nil {
		rt.log.Warn("agentos: applying the journal's retention", slog.Any("err", err))
		return
	}
	if rep.Runs > 0 || rep.Blobs > 0 {
		rt.log.Info("agentos: journal retention", slog.Int("runs_deleted", rep.Runs), slog.Int("payloads_deleted", rep.Blobs), slog.Int64("bytes_freed", rep.Bytes), slog.Int("runs_kept", rep.Kept))
	}
}
