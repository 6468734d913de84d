package rpc

// A catch-up reads megabytes of eth_getLogs answers a second (5,000 logs, about
// 3 MB, per request at 80 USDT transfers a block), and encoding/json spent most
// of the watcher's CPU on them: it validates the whole answer, then decodes every
// field by reflection into strings. parseLogsAnswer reads the one shape nodes send
// (an envelope whose result is an array of flat objects of strings, string arrays,
// booleans and numbers) in a single pass; anything else (an error, an escape in a
// string, nested values it does not expect) makes it give up, and the answer goes
// through the classifier and encoding/json as before.

// parseLogsAnswer reads a JSON-RPC answer whose result is an array of logs; ok is
// false when the answer is not that plain shape (the caller falls back).
func parseLogsAnswer(b []byte) (logs []rawLog, ok bool) {
	p := jparser{b: b}
	if !p.byte('{') {
		return nil, false
	}
	// envelope: "jsonrpc" or "id" was seen; a body with neither is no JSON-RPC
	// answer, and the classifier reads it (see classify).
	found, envelope := false, false
	for first := true; ; first = false {
		if p.peek() == '}' {
			p.i++
			break
		}
		if !first && !p.byte(',') {
			return nil, false
		}
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return nil, false
		}
		switch key {
		case "result":
			if logs, ok = p.logs(); !ok {
				return nil, false
			}
			found = true
		case "error":
			if p.peek() != 'n' { // an error (not null): the classifier reads it
				return nil, false
			}
			if !p.skip() {
				return nil, false
			}
		case "jsonrpc", "id":
			envelope = true
			if !p.skip() {
				return nil, false
			}
		default: // java-tron's {"Error": …}, a provider's own fields: classified
			return nil, false
		}
	}
	p.ws()
	return logs, found && envelope && p.i == len(p.b)
}

// jparser reads the plain JSON of a logs answer, byte by byte.
type jparser struct {
	b []byte
	i int
}

func (p *jparser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jparser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

func (p *jparser) byte(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// str reads a string without escapes (hex, field names); ok is false otherwise.
func (p *jparser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// skip passes over a string, number, literal, or a flat array of those.
func (p *jparser) skip() bool {
	switch c := p.peek(); {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '[':
		p.i++
		if p.peek() == ']' {
			p.i++
			return true
		}
		for {
			if c := p.peek(); c == '[' || c == '{' || !p.skip() {
				return false
			}
			if p.byte(']') {
				return true
			}
			if !p.byte(',') {
				return false
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		for p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] == '+' || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' || p.b[p.i] >= '0' && p.b[p.i] <= '9') {
			p.i++
		}
		return true
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	}
	return false
}

func (p *jparser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// logs reads the result: null or an array of log objects.
func (p *jparser) logs() ([]rawLog, bool) {
	if p.peek() == 'n' {
		return nil, p.lit("null")
	}
	if !p.byte('[') {
		return nil, false
	}
	out := make([]rawLog, 0, len(p.b)/600)
	if p.byte(']') {
		return out, true
	}
	for {
		lg, ok := p.log()
		if !ok {
			return nil, false
		}
		out = append(out, lg)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

// log reads one log object; a field read twice keeps its last value, as
// encoding/json does.
func (p *jparser) log() (rawLog, bool) {
	var r rawLog
	if !p.byte('{') {
		return r, false
	}
	if p.byte('}') {
		return r, true
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return r, false
		}
		var field *string
		switch key {
		case "address":
			field = &r.Address
		case "data":
			field = &r.Data
		case "blockNumber":
			field = &r.BlockNumber
		case "blockHash":
			field = &r.BlockHash
		case "transactionHash":
			field = &r.TxHash
		case "logIndex":
			field = &r.LogIndex
		case "topics":
			if r.Topics, ok = p.strs(); !ok {
				return r, false
			}
		case "removed":
			switch p.peek() {
			case 't':
				r.Removed, ok = true, p.lit("true")
			case 'f':
				r.Removed, ok = false, p.lit("false")
			default:
				ok = false
			}
			if !ok {
				return r, false
			}
		default:
			if !p.skip() {
				return r, false
			}
		}
		if field != nil {
			if p.peek() == 'n' { // null leaves the field as it is, as encoding/json does
				if !p.lit("null") {
					return r, false
				}
			} else if *field, ok = p.str(); !ok {
				return r, false
			}
		}
		if p.byte('}') {
			return r, true
		}
		if !p.byte(',') {
			return r, false
		}
	}
}

// strs reads an array of strings (or null).
func (p *jparser) strs() ([]string, bool) {
	if p.peek() == 'n' {
		return nil, p.lit("null")
	}
	if !p.byte('[') {
		return nil, false
	}
	out := make([]string, 0, 3)
	if p.byte(']') {
		return out, true
	}
	for {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}
