package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// File is one generated file: Name is relative to the module root (forward
// slashes), beside the .proto it came from.
type File struct {
	Name    string
	Content []byte
}

// Generate compiles names (paths relative to root, forward slashes, also the
// import paths other files use) and returns the Go that protoc-gen-go would
// produce for them with paths=source_relative. It writes nothing.
func Generate(root string, names []string) ([]File, error) {
	if len(names) == 0 {
		return nil, errors.New("no .proto file to compile")
	}
	comp := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{root}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := comp.Compile(context.Background(), names...)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", strings.Join(names, " "), err)
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: names,
		Parameter:      proto.String("paths=source_relative"),
	}
	seen := map[string]bool{}
	for _, f := range files {
		if descriptorProto(f).GetOptions().GetGoPackage() == "" {
			return nil, fmt.Errorf("%s: no go_package option: add `option go_package = \"github.com/agentos-run/agentos/actors/<actor>/<actor>pb;<actor>pb\";`", f.Path())
		}
		addFile(req, seen, f)
	}
	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, fmt.Errorf("protoc-gen-go: %w", err)
	}
	for _, f := range plugin.Files {
		if f.Generate {
			gengo.GenerateFile(plugin, f)
		}
	}
	plugin.SupportedFeatures = gengo.SupportedFeatures
	resp := plugin.Response()
	if resp.Error != nil {
		return nil, fmt.Errorf("protoc-gen-go: %s", resp.GetError())
	}
	out := make([]File, 0, len(resp.File))
	for _, f := range resp.File {
		out = append(out, File{Name: f.GetName(), Content: []byte(f.GetContent())})
	}
	return out, nil
}

// addFile appends f after its imports (a plugin request lists every file
// after its dependencies), once.
func addFile(req *pluginpb.CodeGeneratorRequest, seen map[string]bool, f protoreflect.FileDescriptor) {
	if seen[f.Path()] {
		return
	}
	seen[f.Path()] = true
	imports := f.Imports()
	for i := 0; i < imports.Len(); i++ {
		addFile(req, seen, imports.Get(i).FileDescriptor)
	}
	req.ProtoFile = append(req.ProtoFile, descriptorProto(f))
}

// descriptorProto returns f's FileDescriptorProto, with source info (comments)
// when the compiler produced it.
func descriptorProto(f protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if r, ok := f.(linker.Result); ok {
		return r.FileDescriptorProto()
	}
	return protodesc.ToFileDescriptorProto(f)
}
