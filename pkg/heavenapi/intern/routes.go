package intern

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
)

var (
	paths      = table{exact: true} // go-restful's *pathExpression, by its template's tokens
	parameters table                // *restful.Parameter, by its name and description
	docs       = table{exact: true} // []*restful.Parameter, by its (shared) elements
	responses  table                // map[int]restful.ResponseError, by its codes and messages
	metadata   table                // map[string]interface{}, by its keys
)

// Routes makes the routes of c's web services share, with every other
// container given to Routes, their compiled paths (a regular expression
// each, the bulk of a route's memory) and their documentation. Call it once
// the routes are installed and before c serves: it writes the routes
// without go-restful's locks.
func Routes(c *restful.Container) error {
	for _, ws := range c.RegisteredWebServices() {
		wsv := reflect.ValueOf(ws).Elem()
		routes, err := field(wsv, "routes")
		if err != nil {
			return err
		}
		if routes.Kind() != reflect.Slice || routes.Type().Elem() != reflect.TypeFor[restful.Route]() {
			return fmt.Errorf("restful.WebService.routes is a %s, not a []restful.Route", routes.Type())
		}
		// Check the whole layout before writing anything.
		if err := sharePath(wsv, false); err != nil {
			return err
		}
		for i := range routes.Len() {
			if err := sharePath(routes.Index(i), false); err != nil {
				return err
			}
		}
		_ = sharePath(wsv, true)
		for i := range routes.Len() {
			r := routes.Index(i)
			_ = sharePath(r, true)
			shareDocs(r.Addr().Interface().(*restful.Route))
		}
	}
	return nil
}

// sharePath replaces v's field pathExpr by the equal one kept, if write;
// else it only checks that it can.
func sharePath(v reflect.Value, write bool) error {
	p, err := field(v, "pathExpr")
	if err != nil {
		return err
	}
	if p.Kind() != reflect.Pointer || p.Type().Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%s.pathExpr is a %s, not a pointer to a struct", v.Type(), p.Type())
	}
	if p.IsNil() {
		return nil
	}
	// The template's tokens make all of it.
	tokens, err := field(p.Elem(), "tokens")
	if err != nil {
		return err
	}
	t, ok := tokens.Interface().([]string)
	if !ok {
		return fmt.Errorf("%s.tokens is a %s, not a []string", p.Type(), tokens.Type())
	}
	if write {
		// Keep the pointer, not the field that holds it.
		p.Set(paths.share(strings.Join(t, "\n"), reflect.ValueOf(p.Interface())))
	}
	return nil
}

// shareDocs replaces r's documentation by equal documentation kept.
func shareDocs(r *restful.Route) {
	if len(r.ParameterDocs) > 0 {
		var key strings.Builder
		for i, p := range r.ParameterDocs {
			d := p.Data()
			r.ParameterDocs[i] = parameters.share(d.Name+"\n"+d.Description, reflect.ValueOf(p)).Interface().(*restful.Parameter)
			key.WriteString(strconv.FormatUint(uint64(reflect.ValueOf(r.ParameterDocs[i]).Pointer()), 16))
			key.WriteByte(' ')
		}
		r.ParameterDocs = docs.share(key.String(), reflect.ValueOf(r.ParameterDocs)).Interface().([]*restful.Parameter)
	}
	if len(r.ResponseErrors) > 0 {
		var key strings.Builder
		for code, e := range r.ResponseErrors {
			fmt.Fprintf(&key, "%d %s\n", code, e.Message)
		}
		r.ResponseErrors = responses.share(key.String(), reflect.ValueOf(r.ResponseErrors)).Interface().(map[int]restful.ResponseError)
	}
	if len(r.Metadata) > 0 {
		var key strings.Builder
		for k := range r.Metadata {
			key.WriteString(k + "\n")
		}
		r.Metadata = metadata.share(key.String(), reflect.ValueOf(r.Metadata)).Interface().(map[string]interface{})
	}
}
