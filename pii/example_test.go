package pii_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentos-run/agentos/pii"
)

// A data driver's answer is tokenized; the model sees only the tokens; a
// request it writes with a token gets the real value back only on the way
// out to a driver restore_to names.
func Example() {
	t, err := pii.New(pii.Options{
		Key:       []byte("an example key of 16+ bytes"), // agentos keeps a random one in .agentos/pii.key
		Detect:    []string{pii.Email, pii.Phone},
		Names:     []string{"Ada Lovelace"},
		RestoreTo: []string{"fetch:https://crm.example.com/"},
	})
	if err != nil {
		panic(err)
	}
	row, _ := t.JSON([]byte(`{"name":"Ada Lovelace","email":"ada@example.com","phone":"+44 20 7946 0958","orders":3}`))
	fmt.Println(string(row))

	var r struct{ Email string }
	_ = json.Unmarshal(row, &r)
	toCRM := []byte(`{"url":"https://crm.example.com/find?email=` + r.Email + `"}`)
	toLog := []byte(`{"url":"https://log.example.com/find?email=` + r.Email + `"}`)
	fmt.Println(t.Restores("fetch", toCRM), t.Restores("fetch", toLog))
	out, _ := t.Restore(toCRM)
	fmt.Println(string(out))
	// Output:
	// {"name":"PII_NAME_6088ee2ec184","email":"PII_EMAIL_e10fe29414c6","phone":"PII_PHONE_5b5d3de39342","orders":3}
	// true false
	// {"url":"https://crm.example.com/find?email=ada%40example.com"}
}
