package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fieldProblem is a problem with one field found while decoding.
//
// +kubebuilder:object:generate=false
type fieldProblem struct {
	path    string
	message string
	// unknown marks an unknown field, which DecodeOptions.FieldValidation
	// may let pass.
	unknown bool
}

// maxProblems bounds what one document can report, as the strict decoder
// does: past this the rest is noise.
const maxProblems = 100

// typeCheck walks a JSON document against the Go type it decodes into and
// reports every value of the wrong type and every unknown field, each with
// its full path. The JSON decoder stops at the first type error and names
// it without indices ("spec.containers.ports.containerPort"), so it is only
// used to know that something is wrong; this walk says everything that is.
func typeCheck(data []byte, t reflect.Type) []fieldProblem {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []fieldProblem{{message: "invalid JSON: " + err.Error()}}
	}
	c := &typeChecker{}
	c.check(v, t, nil, 0)
	return c.problems
}

// +kubebuilder:object:generate=false
type typeChecker struct {
	problems []fieldProblem
}

var jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func (c *typeChecker) add(p *field.Path, msg string) {
	c.addProblem(fieldProblem{path: pathString(p), message: msg})
}

// unknownKey records a key the type has no field for.
func (c *typeChecker) unknownKey(p *field.Path, name string) {
	c.addProblem(fieldProblem{path: pathString(p), message: unknownField(name), unknown: true})
}

func (c *typeChecker) addProblem(fp fieldProblem) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, fp)
	}
}

func (c *typeChecker) wrongType(p *field.Path, v any, want string) {
	c.add(p, fmt.Sprintf("Invalid type: expected %s, got %s", want, describeJSON(v)))
}

func (c *typeChecker) check(v any, t reflect.Type, p *field.Path, depth int) {
	if v == nil || depth > 10000 || len(c.problems) >= maxProblems {
		return // null leaves any field at its zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		b, err := json.Marshal(v)
		if err != nil {
			c.add(p, "Invalid value: "+err.Error())
			return
		}
		u := reflect.New(t).Interface().(json.Unmarshaler)
		if err := u.UnmarshalJSON(b); err != nil {
			c.add(p, fmt.Sprintf("Invalid value: %s: %s", shortJSON(v), oneLine(err.Error())))
		}
		return
	}
	switch t.Kind() {
	case reflect.Interface:
		return
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.wrongType(p, v, "boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			c.wrongType(p, v, "integer")
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			c.add(p, fmt.Sprintf("Invalid value: %s: expected an integer that fits in %d bits", n, t.Bits()))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			c.wrongType(p, v, "integer")
			return
		}
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			c.add(p, fmt.Sprintf("Invalid value: %s: expected a non-negative integer that fits in %d bits", n, t.Bits()))
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			c.wrongType(p, v, "number")
			return
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			c.add(p, fmt.Sprintf("Invalid value: %s: expected a number that fits in %d bits", n, t.Bits()))
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.wrongType(p, v, "string")
		}
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(jsonUnmarshalerType) {
			s, ok := v.(string)
			if !ok {
				c.wrongType(p, v, "base64-encoded string")
				return
			}
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				c.add(p, fmt.Sprintf("Invalid value: %s: not valid base64: %v", shortJSON(v), err))
			}
			return
		}
		items, ok := v.([]any)
		if !ok {
			c.wrongType(p, v, "array")
			return
		}
		for i, item := range items {
			c.check(item, t.Elem(), p.Index(i), depth+1)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			c.wrongType(p, v, "object")
			return
		}
		for _, k := range sortedKeys(m) {
			kp := p.Key(k)
			switch t.Key().Kind() {
			case reflect.String:
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				if _, err := strconv.ParseInt(k, 10, t.Key().Bits()); err != nil {
					c.add(kp, fmt.Sprintf("Invalid value: %q: expected an integer key", k))
					continue
				}
			default:
				c.add(kp, fmt.Sprintf("Invalid value: %q: unsupported key", k))
				continue
			}
			c.check(m[k], t.Elem(), kp, depth+1)
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			c.wrongType(p, v, "object")
			return
		}
		fields := jsonFieldsOf(t)
		for _, k := range sortedKeys(m) {
			f, ok := fields[k]
			if !ok {
				c.unknownKey(p.Child(k), k)
				continue
			}
			c.check(m[k], f.typ, p.Child(k), depth+1)
		}
	default:
		c.add(p, fmt.Sprintf("cannot decode into a field of Go type %s", t))
	}
}

// pathString renders a path, the root as "".
func pathString(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String()
}

func unknownField(name string) string {
	return fmt.Sprintf("unknown field %q", name)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describeJSON names the JSON type of a value, with the value when short.
func describeJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case json.Number:
		return "number " + string(v)
	case string:
		return "string " + shortJSON(v)
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// shortJSON renders a value for a message, cut short when long.
func shortJSON(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = strconv.Quote(v)
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		s = fmt.Sprint(v)
	}
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// jsonField is a struct field as encoding/json sees it.
//
// +kubebuilder:object:generate=false
type jsonField struct {
	typ reflect.Type
}

var jsonFieldCache sync.Map // reflect.Type -> map[string]jsonField

// jsonFieldsOf returns the JSON names of a struct's fields, with the fields
// of embedded structs promoted the way encoding/json promotes them: the
// shallowest wins, and at equal depth a tagged field beats an untagged one.
func jsonFieldsOf(t reflect.Type) map[string]jsonField {
	if f, ok := jsonFieldCache.Load(t); ok {
		return f.(map[string]jsonField)
	}
	type candidate struct {
		name   string
		typ    reflect.Type
		tagged bool
	}
	fields := map[string]jsonField{}
	current := []reflect.Type{t}
	visited := map[reflect.Type]bool{}
	for len(current) > 0 {
		var next []reflect.Type
		var level []candidate
		for _, st := range current {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				ft := sf.Type
				if name == "" && sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						next = append(next, ft)
						continue
					}
				}
				tagged := name != ""
				if !tagged {
					name = sf.Name
				}
				level = append(level, candidate{name: name, typ: sf.Type, tagged: tagged})
			}
		}
		byName := map[string][]candidate{}
		for _, c := range level {
			byName[c.name] = append(byName[c.name], c)
		}
		for name, cs := range byName {
			if _, shadowed := fields[name]; shadowed {
				continue
			}
			var tagged []candidate
			for _, c := range cs {
				if c.tagged {
					tagged = append(tagged, c)
				}
			}
			switch {
			case len(cs) == 1:
				fields[name] = jsonField{typ: cs[0].typ}
			case len(tagged) == 1:
				fields[name] = jsonField{typ: tagged[0].typ}
			default:
				// Ambiguous: encoding/json ignores the name; so do we, but
				// it must still shadow deeper fields.
				fields[name] = jsonField{}
			}
		}
		current = next
	}
	for name, f := range fields {
		if f.typ == nil {
			delete(fields, name)
		}
	}
	jsonFieldCache.Store(t, fields)
	return fields
}
