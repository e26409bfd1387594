package cluster

import (
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

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
