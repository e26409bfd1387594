package repo

// SetPreloadHook sets what preloadStat tells of each preload (tests).
func SetPreloadHook(f func(n int)) { preloadHook = f }
