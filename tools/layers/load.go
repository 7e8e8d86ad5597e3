package main

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"

	"golang.org/x/tools/go/packages"
)

// load type-checks the packages that patterns name (from dir), without their tests, and returns each one's graph
// of files by import path.
func load(dir string, patterns ...string) (map[string]graph, error) {
	cfg := &packages.Config{Dir: dir,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	out := map[string]graph{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("%s: %w", p.PkgPath, p.Errors[0])
		}
		out[p.PkgPath] = filesOf(p)
	}
	return out, nil
}

// filesOf is p's graph: file A uses file B when A names a package-level name, or a method, that B declares (a
// method's receiver names its type, so a file of methods uses the file of their type).
func filesOf(p *packages.Package) graph {
	g := graph{}
	for _, f := range p.Syntax {
		from := filepath.Base(p.Fset.Position(f.Pos()).Filename)
		g.use(from, from, "")
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != p.Types || !declaredAtTop(p.Types, obj) {
				return true
			}
			g.use(from, filepath.Base(p.Fset.Position(obj.Pos()).Filename), obj.Name())
			return true
		})
	}
	return g
}

// declaredAtTop reports whether obj is a name of the package's scope or a method (fields and locals are not).
func declaredAtTop(pkg *types.Package, obj types.Object) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	fn, ok := obj.(*types.Func)
	return ok && fn.Signature().Recv() != nil
}
