package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/labstack/echo"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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

// etcdProvider is protoactor's etcd provider, with the client it never
// closes closed at Leave, and its registration re-put periodically.
type etcdProvider struct {
	*etcd.Provider
	cancel context.CancelFunc
	own    *clientv3.Client // ours: the probe, then the touches
	prefix string
	stop   chan struct{}
	done   chan struct{} // closed when touch has returned (or never started)
	once   sync.Once
}

// touchEvery is how often a member re-puts its own etcd registration.
// protoactor's provider reads the members, then starts watching without
// a revision: a member registering in between is never seen (measured:
// members joining together sometimes never see one another). A re-put
// (same value, same lease) is a watch event for every member, so a
// missed registration is seen at the next touch.
const touchEvery = 2 * time.Second

func newEtcdProvider(ctx context.Context, opts Options, tc *tlsConfigs) (*etcdProvider, error) {
	cfg := clientv3.Config{Endpoints: opts.Etcd.Endpoints, DialTimeout: opts.Etcd.DialTimeout, Logger: zap.NewNop()}
	if tc != nil && strings.HasPrefix(opts.Etcd.Endpoints[0], "https://") {
		cfg.TLS = tc.etcd // etcd run with --client-cert-auth admits members only
	}
	// protoactor's provider waits for etcd without bound: check first.
	own, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: etcd client for %v: %v", ErrJoin, opts.Etcd.Endpoints, err)
	}
	pctx, cancel := context.WithTimeout(ctx, opts.Etcd.DialTimeout)
	_, err = own.Get(pctx, opts.Etcd.Prefix, clientv3.WithCountOnly())
	cancel()
	if err != nil {
		_ = own.Close()
		return nil, fmt.Errorf("%w: etcd at %v did not answer within %v: %v (is etcd running and reachable?)", ErrJoin, opts.Etcd.Endpoints, opts.Etcd.DialTimeout, err)
	}
	cctx, cancelClient := context.WithCancel(context.Background())
	cfg.Context = cctx
	p, err := etcd.NewWithConfig(opts.Etcd.Prefix, cfg)
	if err != nil {
		cancelClient()
		_ = own.Close()
		return nil, fmt.Errorf("%w: etcd provider: %v", ErrJoin, err)
	}
	done := make(chan struct{})
	close(done) // until StartMember starts the touches
	return &etcdProvider{Provider: p, cancel: cancelClient, own: own, prefix: opts.Etcd.Prefix,
		stop: make(chan struct{}), done: done}, nil
}

func (p *etcdProvider) StartMember(c *pcluster.Cluster) error {
	if err := p.Provider.StartMember(c); err != nil {
		return err
	}
	// The key protoactor's provider registers under (etcd_provider.go:
	// buildKey(clusterName, "<cluster>@<system id>")).
	name := c.Config.Name
	key := strings.Join([]string{p.prefix, name, name + "@" + c.ActorSystem.ID}, "/")
	p.done = make(chan struct{})
	go p.touch(key)
	return nil
}

// touch re-puts key with its value and lease every touchEvery until close.
func (p *etcdProvider) touch(key string) {
	defer close(p.done)
	t := time.NewTicker(touchEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), touchEvery)
		res, err := p.own.Get(ctx, key)
		if err == nil && len(res.Kvs) == 1 && res.Kvs[0].Lease != 0 {
			kv := res.Kvs[0]
			_, _ = p.own.Put(ctx, key, string(kv.Value), clientv3.WithLease(clientv3.LeaseID(kv.Lease)))
		}
		cancel()
	}
}

// Shutdown stops the touches (a touch after the deregistration would put
// the key back), then deregisters.
func (p *etcdProvider) Shutdown(graceful bool) error {
	p.stopTouches()
	return p.Provider.Shutdown(graceful)
}

func (p *etcdProvider) stopTouches() {
	p.once.Do(func() {
		close(p.stop)
		<-p.done // a touch is bounded by touchEvery
	})
}

// close stops the touches, then closes our client and the provider's,
// which protoactor's Shutdown leaves open (its gRPC connection and its
// keep-alive and watch goroutines would outlive the member).
func (p *etcdProvider) close() {
	p.stopTouches()
	_ = p.own.Close()
	p.cancel()
	if c := etcdClientOf(p.Provider); c != nil {
		_ = c.Close()
	}
}

// etcdClientOf returns the unexported client of protoactor's etcd
// provider (nil if a protoactor upgrade renamed it: TestUnexportedFields
// fails then).
func etcdClientOf(p *etcd.Provider) *clientv3.Client {
	f := reflect.ValueOf(p).Elem().FieldByName("client")
	if !f.IsValid() || f.Type() != reflect.TypeOf((*clientv3.Client)(nil)) {
		return nil
	}
	return *(**clientv3.Client)(unsafe.Pointer(f.UnsafeAddr()))
}

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
