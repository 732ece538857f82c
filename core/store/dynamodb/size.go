package dynamodb

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxItemBytes is DynamoDB's item size limit (400 KB = 409,600 bytes by ItemBytes' rule;
// DynamoDB Local accepts exactly this and rejects one byte more).
const MaxItemBytes = 400 << 10

// ItemBytes returns the size of item by DynamoDB's rule: for each attribute the UTF-8
// length of its name plus the size of its value (strings: UTF-8 bytes; binary: bytes;
// numbers: 1 byte per pair of significant digits aligned on the decimal point, plus 1,
// plus 1 when negative; booleans and null: 1; lists and maps:
// 3 bytes plus 1 byte and the size of each element, map keys counted like names; sets:
// the sum of their elements). Use it to measure the bytes a request writes.
func ItemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueBytes(v)
	}
	return n
}

func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberBytes(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberBytes(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueBytes(e)
		}
		return n
	}
	return 0
}

// numberBytes sizes a number as DynamoDB stores it: its significant digits (leading and
// trailing zeros dropped) in base-100 pairs aligned on the decimal point, plus one byte,
// plus one more when negative.
func numberBytes(s string) int {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	point := len(s) // digits before the decimal point
	if i := strings.IndexByte(s, '.'); i >= 0 {
		point, s = i, s[:i]+s[i+1:]
	}
	point += exp
	trimmed := strings.TrimLeft(s, "0")
	point -= len(s) - len(trimmed)
	digits := strings.TrimRight(trimmed, "0")
	if digits == "" {
		return 1
	}
	pad := point & 1 // pairs are aligned on the decimal point
	n := (pad+len(digits)+1)/2 + 1
	if neg {
		n++
	}
	return n
}
