package driver

import (
	"fmt"

	"github.com/agentos-run/agentos/driver/driverbase"
)

// What a call is made of, and the devices a sandbox worker answers itself,
// live in driverbase (which the worker links without this package's
// drivers); they are named here for everyone else.
type (
	// Call is one request from a tool run to a device (driverbase.Call).
	Call = driverbase.Call
	// Error is a failed call as the tool sees it (driverbase.Error).
	Error = driverbase.Error
	// Device is one driver (driverbase.Device).
	Device = driverbase.Device
	// Clock is the time device (driverbase.Clock).
	Clock = driverbase.Clock
	// Random is the entropy device (driverbase.Random).
	Random = driverbase.Random
)

// Driver names used by the sandbox.
const (
	FSDriver     = driverbase.FSDriver
	ClockDriver  = driverbase.ClockDriver
	RandomDriver = driverbase.RandomDriver
)

// Error codes a tool sees as err.code (see driverbase).
const (
	CodeSecurity    = driverbase.CodeSecurity
	CodeNotFound    = driverbase.CodeNotFound
	CodeInvalid     = driverbase.CodeInvalid
	CodeUnsupported = driverbase.CodeUnsupported
	CodeIO          = driverbase.CodeIO
	CodeUnavailable = driverbase.CodeUnavailable
	CodeQuota       = driverbase.CodeQuota
	CodeAbort       = driverbase.CodeAbort
)

// MaxSleep bounds one clock "sleep" (a timer's delay).
const MaxSleep = driverbase.MaxSleep

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError turns any error into an *Error, keeping the code of one already.
func AsError(err error) *Error { return driverbase.AsError(err) }
