package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentos-run/agentos/cluster"
)

// A member alone in a "seeds" cluster, hosting a grain kind; a grain call
// and a publish to its own subscriber.
func ExampleJoin() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	greeter := actor.PropsFromFunc(func(c actor.Context) {
		if v, ok := c.Message().(*wrapperspb.StringValue); ok {
			c.Respond(wrapperspb.String("hello " + v.Value + " from " + pcluster.GetClusterIdentity(c).Identity))
		}
	})
	m, err := cluster.Join(ctx, cluster.Options{
		Kinds:  []cluster.Kind{{Name: "greeter", Props: greeter}},
		Logger: slog.New(slog.DiscardHandler),
		// One process on loopback: plaintext. A cluster across machines
		// sets TLS (certificates from 'agentos cluster certs').
		InsecureLoopback: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Leave(ctx)
	if err := m.WaitMembers(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}

	res, err := m.Request(ctx, "greeter", "g1", wrapperspb.String("forge"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.(*wrapperspb.StringValue).Value)

	got := make(chan string, 1)
	unsub, err := m.Subscribe(ctx, "tools", func(p proto.Message) { got <- p.(*wrapperspb.StringValue).Value })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unsub()
	if err := m.Publish(ctx, "tools", wrapperspb.String("tool committed")); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-got)
	fmt.Println(len(m.Status().Alive()), "member")
	// Output:
	// hello forge from g1
	// tool committed
	// 1 member
}
