package intern

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
)

var (
	paths      = table{exact: true} // go-restful's *pathExpression, by its template's tokens
	parameters table                // *restful.Parameter, by its name and description
	docs       = table{exact: true} // []*restful.Parameter, by its (shared) elements
	responses  table                // map[int]restful.ResponseError, by its codes, messages and models' types
	metadata   table                // map[string]interface{}, by its keys and values
)

// Routes makes the routes of c's web services share, with every other
// container given to Routes, their compiled paths (a regular expression
// each, the bulk of a route's memory) and their documentation. Call it once
// the routes are installed and before c serves: it writes the routes
// without go-restful's locks.
func Routes(c *restful.Container) error {
	// Check the whole layout before writing anything.
	var found []path
	for _, ws := range c.RegisteredWebServices() {
		wsv := reflect.ValueOf(ws).Elem()
		routes, err := field(wsv, "routes")
		if err != nil {
			return err
		}
		if routes.Kind() != reflect.Slice || routes.Type().Elem() != reflect.TypeFor[restful.Route]() {
			return fmt.Errorf("restful.WebService.routes is a %s, not a []restful.Route", routes.Type())
		}
		holders := []reflect.Value{wsv}
		for i := range routes.Len() {
			holders = append(holders, routes.Index(i))
		}
		for _, h := range holders {
			p, err := pathOf(h)
			if err != nil {
				return err
			}
			if p.field.IsValid() {
				found = append(found, p)
			}
		}
	}
	for _, p := range found {
		// Keep the pointer, not the field that holds it.
		shared, _ := paths.share(p.key, reflect.ValueOf(p.field.Interface()))
		p.field.Set(shared)
	}
	for _, ws := range c.RegisteredWebServices() {
		routes, _ := field(reflect.ValueOf(ws).Elem(), "routes") // checked above
		for i := range routes.Len() {
			shareDocs(routes.Index(i).Addr().Interface().(*restful.Route))
		}
	}
	return nil
}

// path is a compiled path of a route or web service: the field that holds
// it and the key it is shared by.
type path struct {
	field reflect.Value
	key   string
}

// pathOf finds the field pathExpr of v (a web service or a route) and its
// key; no field when it holds nil.
func pathOf(v reflect.Value) (path, error) {
	p, err := field(v, "pathExpr")
	if err != nil {
		return path{}, err
	}
	if p.Kind() != reflect.Pointer || p.Type().Elem().Kind() != reflect.Struct {
		return path{}, fmt.Errorf("%s.pathExpr is a %s, not a pointer to a struct", v.Type(), p.Type())
	}
	if p.IsNil() {
		return path{}, nil
	}
	// The template's tokens make all of it.
	tokens, err := field(p.Elem(), "tokens")
	if err != nil {
		return path{}, err
	}
	t, ok := tokens.Interface().([]string)
	if !ok {
		return path{}, fmt.Errorf("%s.tokens is a %s, not a []string", p.Type(), tokens.Type())
	}
	return path{field: p, key: strings.Join(t, "\n")}, nil
}

// shareDocs replaces r's documentation by equal documentation kept.
func shareDocs(r *restful.Route) {
	if len(r.ParameterDocs) > 0 {
		var key strings.Builder
		allKept := true
		for i, p := range r.ParameterDocs {
			d := p.Data()
			shared, kept := parameters.share(strings.Join([]string{d.Name, strconv.Itoa(d.Kind), d.DataType, d.Description}, "\n"), reflect.ValueOf(p))
			r.ParameterDocs[i], allKept = shared.Interface().(*restful.Parameter), allKept && kept
			key.WriteString(strconv.FormatUint(uint64(shared.Pointer()), 16))
			key.WriteByte(' ')
		}
		// The list's key is its elements' identities: with one that is
		// not kept, it would be new at every call and stay forever, with
		// the list (every heaven start leaked its routes' parameters so).
		if allKept {
			shared, _ := docs.share(key.String(), reflect.ValueOf(r.ParameterDocs))
			r.ParameterDocs = shared.Interface().([]*restful.Parameter)
		}
	}
	if len(r.ResponseErrors) > 0 {
		// In key order: equal maps must make equal keys.
		var key strings.Builder
		for _, code := range slices.Sorted(maps.Keys(r.ResponseErrors)) {
			e := r.ResponseErrors[code]
			fmt.Fprintf(&key, "%d %s %T\n", code, e.Message, e.Model)
		}
		shared, _ := responses.share(key.String(), reflect.ValueOf(r.ResponseErrors))
		r.ResponseErrors = shared.Interface().(map[int]restful.ResponseError)
	}
	if len(r.Metadata) > 0 {
		var key strings.Builder
		for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
			fmt.Fprintf(&key, "%s %v\n", k, r.Metadata[k])
		}
		shared, _ := metadata.share(key.String(), reflect.ValueOf(r.Metadata))
		r.Metadata = shared.Interface().(map[string]interface{})
	}
}
