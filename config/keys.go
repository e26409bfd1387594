package config

import "reflect"

// Keys lists the dotted keys of the schema whose type is t and of
// everything it nests, as docs/CONFIG.md writes them: "limits.timeout",
// "secrets.*.env" (a map's entries), "agent.grants[].scope" (a list's
// elements). A Duration, and any type that decodes itself, is one key.
func Keys(t reflect.Type) []string { return keys(t, "") }

func keys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Map:
		return keys(t.Elem(), prefix+".*")
	case t.Kind() == reflect.Slice:
		return keys(t.Elem(), prefix+"[]")
	case t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler):
		return nil
	}
	var out []string
	for i := range t.NumField() {
		k, ok := jsonKey(t.Field(i))
		if !ok {
			continue
		}
		key := join(prefix, k)
		out = append(out, key)
		out = append(out, keys(t.Field(i).Type, key)...)
	}
	return out
}
