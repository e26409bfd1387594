package cluster

import (
	"crypto/tls"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"strconv"
	"sync"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/labstack/echo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// seedsProvider is protoactor's automanaged provider with its health
// endpoint on a listener of ours: automanaged binds 0.0.0.0:<port> itself,
// which would expose it on every interface and needs a fixed port.
type seedsProvider struct {
	*automanaged.AutoManagedProvider
	e    *echo.Echo
	addr string // host:port of the health endpoint

	mu sync.Mutex
	c  *pcluster.Cluster
}

func newSeedsProvider(opts Options, tc *tlsConfigs) (*seedsProvider, error) {
	ln := opts.HealthListener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(opts.Host, strconv.Itoa(opts.HealthPort)))
		if err != nil {
			return nil, fmt.Errorf("%w: the health endpoint cannot listen on %s:%d: %v (pick a free HealthPort, or 0)", ErrJoin, opts.Host, opts.HealthPort, err)
		}
	}
	addr := ln.Addr().String()
	if tc != nil {
		ln = tls.NewListener(ln, tc.server) // the health endpoint admits members only
	}
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard)
	e.StdLogger = stdlog.New(io.Discard, "", 0) // the server's log: refused handshakes (the polling side logs them once)
	e.Listener = ln                             // echo's Start uses it instead of binding its address argument
	p := &seedsProvider{e: e, addr: addr}
	e.GET("/_health", func(ctx echo.Context) error {
		p.mu.Lock()
		c := p.c
		p.mu.Unlock()
		if c == nil {
			return ctx.NoContent(503)
		}
		host, memberPort, err := c.ActorSystem.GetHostPort()
		if err != nil {
			return ctx.NoContent(503)
		}
		return ctx.JSON(200, automanaged.NewNode(c.Config.Name, c.ActorSystem.ID, host, memberPort, port, c.GetClusterKinds()))
	})
	hosts := append([]string(nil), opts.Seeds...)
	self := false
	for _, h := range hosts {
		self = self || h == addr
	}
	if !self {
		hosts = append(hosts, addr)
	}
	p.AutoManagedProvider = automanaged.NewWithTesting(opts.RefreshInterval, port, e, hosts...)
	if tc != nil {
		if err := dialHealthOverTLS(p.AutoManagedProvider, tc, opts.Logger); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	return p, nil
}

func (p *seedsProvider) StartMember(c *pcluster.Cluster) error {
	p.mu.Lock()
	p.c = c
	p.mu.Unlock()
	return p.AutoManagedProvider.StartMember(c)
}

// close closes the health endpoint (Shutdown does too; a member that
// failed to start was never shut down).
func (p *seedsProvider) close() { _ = p.e.Close() }

// recoverStream is a gRPC stream interceptor for protoactor's remote
// server: a message whose protobuf type the node does not link makes
// protoactor's endpoint reader dereference a nil type and panic on the
// gRPC stream's goroutine, which kills the process. The interceptor turns
// that panic into the end of that one connection.
func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("a remote message crashed protoactor's endpoint reader: the connection is dropped; "+
					"is the sender using a protobuf type this node does not link?",
					slog.Any("panic", r), slog.String("method", info.FullMethod))
				err = status.Errorf(codes.Internal, "agentos cluster: the receiving node could not decode a message: %v", r)
			}
		}()
		return handler(srv, ss)
	}
}
