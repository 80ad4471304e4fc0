/**
 * CEL as kube-apiserver evaluates a CRD's x-kubernetes-validations: the Kubernetes libraries
 * (k8s.io/apiserver pkg/cel/library/quantity_test.go, ported), the rules' errors with their field
 * paths, reasons and messages, transition rules and ratcheting (k8s.io/apiextensions-apiserver
 * pkg/apiserver/schema/cel/validation_test.go, ported), and the CRD-creation checks of rules
 * (pkg/apis/apiextensions/validation/validation.go).
 */
import t from 'tap'
import { parse as parseYaml } from 'yaml'
import { celEnvironment, Quantity } from '../operator/kube/cel/library.ts'
import { hasRules, normalizeFieldPath, validateRules, type RuleSchema } from '../operator/kube/cel/rules.ts'
import { declarationLine, goValidationRule, ruleDeclarationProblems } from '../operator/kube/cel/declarations.ts'
import { ruleCause, ruleDeclarationCauses } from '../operator/sandbox/crd/cel.ts'

const evaluate = (expr: string, self?: unknown): unknown => celEnvironment().evaluate(expr, { self })
const schemaOf = (yaml: string): RuleSchema => parseYaml(yaml) as RuleSchema
/** Errors and ratcheted errors as field.Error prints them, from the root `root` as upstream's tests name it. */
function run(schema: RuleSchema, obj: unknown, old?: unknown): { errors: string[]; warnings: string[] } {
  const r = validateRules(schema, obj, old, 'root')
  const line = (f: Parameters<typeof ruleCause>[0]) => {
    const c = ruleCause(f)
    return `${c.field}: ${c.message}`
  }
  return { errors: r.errors.map(line), warnings: r.ratcheted.map(line) }
}

t.test('the quantity library (library/quantity_test.go)', async (t) => {
  const cases: [string, unknown][] = [
    ['isQuantity("20")', true],
    ['isQuantity("20M")', true],
    ['isQuantity("20Mi")', true],
    ['isQuantity("20Mo")', false],
    ['isQuantity("10Mm")', false],
    ['quantity("200M") == quantity("200M")', true],
    ['quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', true],
    ['quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")', true],
    ['quantity("200M") == quantity("0.3G")', false],
    ['quantity("50M").isLessThan(quantity("50Mi"))', true],
    ['quantity("50M").isLessThan(quantity("100M"))', true],
    ['quantity("100M").isLessThan(quantity("50M"))', false],
    ['quantity("50Mi").isGreaterThan(quantity("50M"))', true],
    ['quantity("150Mi").isGreaterThan(quantity("100Mi"))', true],
    ['quantity("50M").isGreaterThan(quantity("100M"))', false],
    ['quantity("200M").compareTo(quantity("0.2G"))', 0n],
    ['quantity("50M").compareTo(quantity("50Mi"))', -1n],
    ['quantity("50Mi").compareTo(quantity("50M"))', 1n],
    ['quantity("50k").add(quantity("20")) == quantity("50.02k")', true],
    ['quantity("50k").add(20).isLessThan(quantity("50020"))', false],
    ['quantity("50k").sub(quantity("20")) == quantity("49.98k")', true],
    ['quantity("50k").sub(20) == quantity("49980")', true],
    ['quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980n],
    ['quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20n],
    ['quantity("50k").asInteger()', 50000n],
    ['quantity("9999999999999999999999999999999999999G").isInteger()', false],
    ['quantity("50").isInteger()', true],
    ['quantity("50.703k").asApproximateFloat()', 50703],
    ['[quantity("9999999999999999999999999999999999999")].all(x, x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)', true],
    ['quantity("-5").sign()', -1n],
  ]
  for (const [expr, want] of cases) t.equal(evaluate(expr), want, expr)
  t.throws(() => evaluate('quantity("10Mo")'), /quantities must match the regular expression/)
  t.throws(() => evaluate('quantity("10Mm")'), /unable to parse quantity's suffix/)
  t.throws(() => evaluate('quantity("9999999999999999999999999999999999999G").asInteger()'), /cannot convert value to integer/)
  t.notOk(celEnvironment().check('isQuantity([1, 2, 3])').valid, 'no isQuantity(list) overload')
})

t.test('lists, regex and string extensions', async (t) => {
  const cases: [string, unknown][] = [
    ['[1, 2, 3].isSorted()', true],
    ['["b", "a"].isSorted()', false],
    ['[3, 1, 2].min()', 1n],
    ['[3, 1, 2].max()', 3n],
    ['[1, 2, 3].sum()', 6n],
    ['"abc 123".find("[0-9]+")', '123'],
    ['"abc".find("[0-9]+")', ''],
    ['"a1b22c333".findAll("[0-9]+")', ['1', '22', '333']],
    ['"a1b22c333".findAll("[0-9]+", 2)', ['1', '22']],
    ['"ABC".find("(?i)b")', 'B'],
    ['"hello".charAt(1)', 'e'],
    ['"hello".charAt(5)', ''],
    ['"a.b.c".replace(".", "/")', 'a/b/c'],
    ['"a.b.c".replace(".", "/", 1)', 'a/b.c'],
    ['"a.b.c".replace(".", "/", -1)', 'a/b/c'],
    ['"A".lowerAscii()', 'a'],
    ['self.?a.?b.orValue(5)', 5n],
    ['cel.bind(x, 2, x * x)', 4n],
  ]
  for (const [expr, want] of cases) t.same(evaluate(expr, {}), want, expr)
  t.throws(() => evaluate('"hi".charAt(3)'), /index out of range: 3/)
  t.throws(() => evaluate('[].min()'), /min\(list\) called on an empty list/)
  t.throws(() => evaluate('[1, "a"].max()'), /no such overload/)
})

t.test('a rule that is not true is a field error: at the node or its fieldPath, with the reason and the message the rule gives (validation_test.go)', async (t) => {
  const schema = schemaOf(`
type: object
x-kubernetes-validations:
- rule: self.foo == "baz"
  message: gotta be baz
  fieldPath: .foo
- rule: "!has(self.bar)"
  reason: FieldValueForbidden
  message: bar is not allowed
  fieldPath: .bar
- rule: has(self.req)
  reason: FieldValueRequired
  messageExpression: "'req is needed when foo is ' + self.foo"
  fieldPath: ".req"
- rule: size(self.m) < 2
  fieldPath: .m['a.b']
properties:
  foo: {type: string, x-kubernetes-validations: [{rule: self.size() <= 3}]}
  bar: {type: string}
  req: {type: string}
  m: {type: object, additionalProperties: {type: integer, x-kubernetes-validations: [{rule: self % 2 == 1, message: gotta be odd}]}}
`)
  t.same(run(schema, { foo: 'bazz', bar: 'x', m: { 'a.b': 2, c: 3 } }).errors, [
    'root.foo: Invalid value: gotta be baz',
    'root.bar: Forbidden: bar is not allowed',
    'root.req: Required value: req is needed when foo is bazz',
    'root.m[a.b]: Invalid value: failed rule: size(self.m) < 2',
    'root.foo: Invalid value: "bazz": failed rule: self.size() <= 3',
    'root.m[a.b]: Invalid value: 2: gotta be odd',
  ])
  t.same(run(schema, { foo: 'baz', req: 'x', m: {} }).errors, [], 'every rule true')
})

t.test('a rule that cannot be evaluated is an error naming the rule; a messageExpression that fails falls back to the message', async (t) => {
  const schema = schemaOf(`
type: object
properties:
  a: {type: integer}
  s: {x-kubernetes-int-or-string: true}
x-kubernetes-validations:
- rule: self.a / 0 == 1
- rule: self.s + 1 == 2
  message: s plus one
- rule: "false"
  message: plain
  messageExpression: "self.a > 0 ? 'a is ' + string(self.a) : ''"
`)
  t.same(run(schema, { a: 1, s: 'x' }).errors, [
    'root: Invalid value: "object": division by zero evaluating rule: self.a / 0 == 1',
    `root: Invalid value: "object": 'no such overload: dyn<string> + int': call arguments did not match a supported operator, function or macro signature for rule: s plus one`,
    'root: Invalid value: a is 1',
  ])
  t.same(run(schema, { a: 0, s: 'x' }).errors.slice(2), ['root: Invalid value: plain'], 'an empty messageExpression result: the message')
  t.same(run(schema, { s: 'x' }).errors[0], 'root: Invalid value: "object": no such key: a evaluating rule: self.a / 0 == 1', 'a field the object lacks')
})

t.test('transition rules run only on an update, when the old value exists', async (t) => {
  const schema = schemaOf(`
type: object
properties:
  name: {type: string, x-kubernetes-validations: [{rule: self == oldSelf, message: is immutable}]}
  size: {type: integer, x-kubernetes-validations: [{rule: self >= oldSelf, message: may only grow, messageExpression: "'may only grow from ' + string(oldSelf)"}]}
`)
  t.same(run(schema, { name: 'a', size: 3 }).errors, [], 'a create runs no transition rule')
  t.same(run(schema, { name: 'a', size: 3 }, { size: 2 }).errors, [], 'a field that had no old value is not compared')
  t.same(run(schema, { name: 'b', size: 1 }, { name: 'a', size: 2 }).errors, ['root.name: Invalid value: "b": is immutable', 'root.size: Invalid value: 1: may only grow from 2'], 'a messageExpression reads oldSelf too')
})

t.test('ratcheting: on an update, the errors of a node equal to its old value are only warnings (validation_test.go TestRatcheting)', async (t) => {
  const foo = schemaOf(`
type: object
properties:
  foo: {type: string, x-kubernetes-validations: [{rule: self == "bar", message: gotta be bar}]}
`)
  t.same(run(foo, { foo: 'baz' }, { foo: 'baz' }), { errors: [], warnings: ['root.foo: Invalid value: "baz": gotta be bar'] }, 'normal CEL expression')
  t.same(run(foo, { foo: 'qux' }, { foo: 'baz' }).errors, ['root.foo: Invalid value: "qux": gotta be bar'], 'a changed value is judged')
  const atomic = schemaOf(`
type: array
x-kubernetes-list-type: atomic
items:
  type: object
  properties:
    bar: {type: string, x-kubernetes-validations: [{rule: self == "baz", message: gotta be baz}]}
`)
  t.same(run(atomic, [{ bar: 'bar' }], [{ bar: 'bar' }]).warnings, ['root[0].bar: Invalid value: "bar": gotta be baz'], 'a descendant of an unchanged atomic list')
  const set = schemaOf(`
type: array
x-kubernetes-list-type: set
items: {type: number, x-kubernetes-validations: [{rule: int(self) % 2 == 1, message: gotta be odd}]}
`)
  t.same(run(set, [1, 2], [1, 2]).warnings, ['root[1]: Invalid value: 2: gotta be odd'], 'a descendant of an unchanged set')
  const transition = schemaOf(`
type: object
properties:
  foo: {type: string, x-kubernetes-validations: [{rule: oldSelf != "bar" && self == "baz", message: gotta be baz}]}
`)
  t.same(run(transition, { foo: 'bar' }, { foo: 'bar' }).errors, ['root.foo: Invalid value: "bar": gotta be baz'], 'a transition rule is never ratcheted')
  const parent = schemaOf(`
type: object
x-kubernetes-validations: [{rule: self.foo == "baz", message: gotta be baz, fieldPath: .foo}]
properties:
  bar: {type: string}
  foo: {type: string}
`)
  t.same(run(parent, { foo: 'bar', bar: 'invalid' }, { foo: 'bar' }).errors, ['root.foo: Invalid value: gotta be baz'], 'changing field path does not change ratcheting logic')
  const maps = schemaOf(`
type: object
properties:
  list:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items: {type: object, properties: {name: {type: string}, v: {type: integer, x-kubernetes-validations: [{rule: self < 5}]}}}
`)
  t.same(run(maps, { list: [{ name: 'b', v: 9 }, { name: 'a', v: 7 }] }, { list: [{ name: 'a', v: 7 }] }), {
    errors: ['root.list[0].v: Invalid value: 9: failed rule: self < 5'],
    warnings: ['root.list[1].v: Invalid value: 7: failed rule: self < 5'],
  }, 'map-list items correlate with the old ones by their keys, not their index')
})

t.test('the CRD-creation checks of rules: compile errors in cel-go\'s form, undefined fields, fieldPaths and reasons', async (t) => {
  const schema = schemaOf(`
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: integer}
      m: {type: object, additionalProperties: {type: string}}
    x-kubernetes-validations:
    - rule: "self.a >"
    - rule: self.b == 1
    - rule: self.m.anything == "x" && self.a == 1
      fieldPath: .c
    - rule: self.a == 1
      reason: FieldValueWrong
    - rule: self.a + 1
    - rule: "true"
      messageExpression: size(self.m) + 1
    - rule: self.a < 2
      message: ""
    - rule: ""
    - rule: nosuchfunction(self.a)
    - rule: self.a == 1
      optionalOldSelf: true
`)
  const lines = ruleDeclarationProblems(schema, 'openAPIV3Schema').map(declarationLine)
  t.same(lines, [
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[2].fieldPath: must be a valid path',
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[3].reason: unsupported value "FieldValueWrong": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[6].message: must be non-empty if specified',
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[7].rule: rule is not specified',
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: compilation failed: ERROR: <input>:1:9: Syntax error: Unexpected token: EOF\n | self.a >\n | ........^",
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule: compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b == 1\n | ....^",
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[4].rule: cel expression must evaluate to a bool',
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[5].messageExpression: messageExpression must evaluate to a string',
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[8].rule: compilation failed: ERROR: <input>:1:1: found no matching overload for 'nosuchfunction(dyn)'\n | nosuchfunction(self.a)\n | ^",
    'openAPIV3Schema.properties[spec].x-kubernetes-validations[9].optionalOldSelf: may not be set if oldSelf is not used in rule',
  ])
  const ok = schemaOf(`
type: object
properties:
  m: {type: object, additionalProperties: {type: object, properties: {x: {type: string}}}}
  n: {type: object, x-kubernetes-preserve-unknown-fields: true}
x-kubernetes-validations:
- rule: self.m.all(k, self.m[k].x != "") && self.n.whatever == 1 && self.?m.?k.?x.orValue("") == ""
  fieldPath: ".m['k'].x"
`)
  t.same(ruleDeclarationProblems(ok, 'openAPIV3Schema'), [], 'map keys, preserved fields and optional selects are not undefined fields')
})

t.test('every declaration problem apiextensions reports, at its path, as the sandbox words it', async (t) => {
  const schema = schemaOf(`
type: object
properties:
  m:
    type: object
    additionalProperties:
      type: string
      x-kubernetes-validations:
      - rule: "self.size()\\n> 0"
      - rule: self == "x"
        message: "two\\nlines"
      - rule: self == "x"
        messageExpression: " "
      - rule: self == "x"
        fieldPath: " "
      - rule: self == "x"
        fieldPath: ".a\\n"
      - rule: self == "x"
        messageExpression: "self +"
      - rule: self == "x"
        messageExpression: "'was ' + oldSelf + ', now ' + self"
  l:
    type: array
    items: {type: integer, x-kubernetes-validations: [{rule: self > 0, reason: Nope}]}
`)
  t.same(ruleDeclarationProblems(schema, 's').map((p) => [p.field, p.type]), [
    ['s.properties[m].additionalProperties.x-kubernetes-validations[0].message', 'Required'],
    ['s.properties[m].additionalProperties.x-kubernetes-validations[1].message', 'Invalid'],
    ['s.properties[m].additionalProperties.x-kubernetes-validations[2].messageExpression', 'Required'],
    ['s.properties[m].additionalProperties.x-kubernetes-validations[3].fieldPath', 'Invalid'],
    ['s.properties[m].additionalProperties.x-kubernetes-validations[4].fieldPath', 'Invalid'],
    ['s.properties[l].items.x-kubernetes-validations[0].reason', 'NotSupported'],
    ['s.properties[m].additionalProperties.x-kubernetes-validations[5].messageExpression', 'Invalid'],
  ], 'a messageExpression may read oldSelf')
  const causes = ruleDeclarationCauses(schema as never, 's').map((c) => `${c.reason} ${c.message}`)
  t.equal(causes[0], 'FieldValueRequired Required value: message must be specified if rule contains line breaks')
  t.equal(causes[1], 'FieldValueInvalid Invalid value: "two\\nlines": must not contain line breaks')
  t.equal(causes[5], 'FieldValueNotSupported Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"')
  t.match(causes[6], /^FieldValueInvalid Invalid value: \{"Rule":"self == \\"x\\"".*\}: messageExpression compilation failed: ERROR: <input>:1:7: Syntax error/)
  t.equal(goValidationRule({ rule: 'self.a < 1 && self.b > 2', reason: 'FieldValueForbidden', optionalOldSelf: true }), '{"Rule":"self.a \\u003c 1 \\u0026\\u0026 self.b \\u003e 2","Message":"","MessageExpression":"","Reason":"FieldValueForbidden","FieldPath":"","OptionalOldSelf":true}', 'encoding/json escapes for HTML')
})

t.test('field paths: fields, map keys in brackets, and what is not a path (ValidFieldPath)', async (t) => {
  const s = schemaOf(`
type: object
properties:
  a: {type: object, properties: {b: {type: string}}}
  m: {type: object, additionalProperties: {type: object, properties: {x: {type: string}}}}
`)
  t.same(normalizeFieldPath('.a.b', s), { path: 'a.b' })
  t.same(normalizeFieldPath(".m['k.1'].x", s), { path: 'm[k.1].x' })
  t.same(normalizeFieldPath('.m.k', s), { path: 'm[k]' })
  t.same(normalizeFieldPath('a', s), { error: 'expected [ or . but got: a' })
  t.same(normalizeFieldPath('.a.b.c', s), { error: 'does not refer to a valid field' })
  t.same(normalizeFieldPath('.a.', s), { error: 'unexpected end of JSON path' })
  t.same(normalizeFieldPath('.m[k]', s), { error: 'expected single quoted string but got k' })
  t.same(normalizeFieldPath(".m['k'", s), { error: 'unexpected end of JSON path' })
  t.same(normalizeFieldPath(".m['k'.", s), { error: 'expected ] but got .' })
  t.same(normalizeFieldPath('.m[', s), { error: 'unexpected end of JSON path' })
})

t.test('values reach CEL typed by their schema; rules of atomic maps do not correlate; a rule that never compiled is an error on every object', async (t) => {
  const s = schemaOf(`
type: object
properties:
  d: {type: number, x-kubernetes-validations: [{rule: type(self) == double}]}
  i: {type: integer, x-kubernetes-validations: [{rule: type(self) == int}]}
  f: {type: number, x-kubernetes-validations: [{rule: self > 1.0}]}
  am:
    type: object
    x-kubernetes-map-type: atomic
    additionalProperties: {type: string, x-kubernetes-validations: [{rule: self == oldSelf, message: frozen}]}
  bad: {type: string, x-kubernetes-validations: [{rule: "self ==", message: never}]}
  long: {type: string, x-kubernetes-validations: [{rule: "false", message: fallback, messageExpression: self}]}
  num: {type: integer, x-kubernetes-validations: [{rule: "false", message: not a string, messageExpression: "self"}]}
`)
  t.same(run(s, { d: 3, i: 3, f: 1.5 }).errors, [], '3 is a double where the schema says number')
  t.same(run(s, { am: { k: 'b' } }, { am: { k: 'a' } }).errors, [], 'an atomic map\'s values have no old value')
  t.same(run(s, { bad: 'x' }).errors, ['root.bad: Invalid value: "string": rule compile error: compilation failed: ERROR: <input>:1:8: Syntax error: Unexpected token: EOF\n | self ==\n | .......^'])
  t.same(run(s, { long: 'a\nb' }).errors, ['root.long: Invalid value: "a\\nb": fallback'], 'a message with a line break: the message')
  t.same(run(s, { long: 'x'.repeat(5121) }).errors, [`root.long: Invalid value: "${'x'.repeat(5121)}": fallback`], 'a message too long: the message')
  t.same(run(s, { num: 1 }).errors, ['root.num: Invalid value: 1: not a string'], 'a message that is not a string: the message')
  t.same(run(s, { d: null }).errors, [], 'a null is judged by its parent')
  t.same(ruleCause({ field: 'x', reason: 'FieldValueDuplicate', value: { v: 'a' }, detail: 'ignored' }), { reason: 'FieldValueDuplicate', message: 'Duplicate value: "a"', field: 'x' })
  t.equal(new Quantity({ mantissa: 1536n, exponent: 0, format: 'BinarySI' }).toString(), '1536', 'a Quantity prints as the API server prints it')
  t.equal(evaluate('quantity("1.5Gi").asInteger()'), 1610612736n)
  t.ok(hasRules(s))
  t.notOk(hasRules({ type: 'object', properties: { a: { type: 'string' } } }))
})
