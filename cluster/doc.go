// Package cluster makes an agentos node a member of a protoactor-go
// cluster: protoactor's cluster, remote (gRPC), disthash identity lookup
// and membership providers, behind fences for the protoactor behaviours
// that break a long-lived node. It never implements membership or gossip
// itself.
//
// A Member is one node: Join starts its actor system (actors/system), its
// remote and its cluster member; Request calls a grain (a cluster kind
// activated once per identity in the whole cluster); Publish and
// Subscribe are protoactor's pub-sub; Status says which members this one
// sees and which grains it holds; WaitMembers waits for n members; Leave
// leaves and stops everything.
//
// # Membership
//
// Options.Provider chooses protoactor's provider:
//
//	seeds   ours (seeds.go; protoactor's automanaged JSON). Every member
//	        serves GET /_health (JSON: its id, address, kinds, the ids it
//	        lists alive) and polls the endpoints in Options.Seeds every
//	        RefreshInterval; a member whose endpoint does not answer is
//	        dropped. A member that answers but no longer lists this one
//	        (it was paused or cut off) makes it rejoin under a new id. It
//	        discovers nothing: list every member's health endpoint in every
//	        member's Seeds. No external service: development, tests, a
//	        fixed set of nodes.
//	etcd    ours (etcdmembers.go). Every member puts its address and
//	        kinds under Prefix/<cluster>/<id> with a 3 s lease, kept alive;
//	        its member list is a whole read of the prefix at every watch
//	        event and every second. Production.
//
// A member that left (or was dropped) is blocked for good by protoactor:
// a node that restarts joins as a new member (a new actor system id), and
// an etcd member whose lease lapsed (etcd unreachable, the process paused)
// registers again under a new id (<cluster>@<system id>#<n>) and logs it.
//
// # Protocol
//
// What crosses members MUST be a protoc-gen-go generated message linked
// into every node (system.CheckRemote): Request and Publish check it
// before sending. A grain answers with c.Respond(msg) with such a
// message. Request retries after a timeout: grain messages MUST be
// idempotent (or the caller accepts at-least-once delivery).
//
// # Lifecycle
//
// Join returns once the member has started (at least 1 s: protoactor
// sleeps in StartMember; join several members concurrently). The other
// members appear asynchronously: WaitMembers. Leave (bounded by its
// context) announces the leave, deregisters from the provider, stops the
// grain activations, the actors spawned through SystemWrapper, the gossip
// and the remote; it is idempotent. After Leave every call returns
// ErrLeft.
//
// # Failure
//
// The fences (each with a test in defects_test.go that shows protoactor's
// raw behaviour first; docs/CLUSTER.md has the measurements):
//
//	consensus    TopologyConsensus never reports consensus: WaitMembers
//	             watches the ClusterTopology events instead.
//	death/move   a grain call to a member that died or to an activation
//	             that moved hits a timeout or a dead letter; protoactor's
//	             Request gives up after one RequestTimeout. Request drops
//	             the cached PID, looks the grain up again and retries with
//	             backoff until its context ends.
//	pub-sub      the topic actor keeps subscribers in memory: a topology
//	             change that moves it loses them. The member renews its
//	             subscriptions after every topology change and every
//	             second.
//	placement    disthash's placement actor activates whatever it is asked,
//	             owner or not, so a member with a stale view creates a
//	             duplicate that lives on. An activation on a member that
//	             does not own it stops before its actor sees a message;
//	             Request then looks the grain up again.
//	decode       a message of a type the receiver does not link crashes the
//	             receiving process (nil dereference in the endpoint
//	             reader). A gRPC stream interceptor turns the panic into
//	             the end of that connection.
//	connections  protoactor's endpoint writer makes 5 connection attempts,
//	             leaks the gRPC connection of each failed one (redialing
//	             forever) and sleeps 2 s after each inside its Started
//	             handler (a leave then takes 10 s): one attempt per writer.
//	seeds        automanaged binds 0.0.0.0:<fixed port> and never heals a
//	             member it dropped: replaced by seeds.go.
//	etcd         the provider waits for etcd without bound and never closes
//	             its client: Join probes etcd within DialTimeout, Leave
//	             closes the client. It starts watching without a revision
//	             after reading the members, so a registration in between
//	             is missed: each member re-puts its registration every 2 s.
//	shutdown     Cluster.Shutdown stops no actor and sleeps 2 s: Leave.
//
// protoactor's cluster and remote have data races of their own: the tests
// of this package do not run under -race (docs/CLUSTER.md).
package cluster
