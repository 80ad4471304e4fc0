/**
 * `x-kubernetes-validations` rules of a structural schema, compiled and evaluated as
 * apiextensions-apiserver does (pkg/apiserver/schema/cel/compilation.go and validation.go): the
 * rules of every node that holds a value are run with `self` bound to it (and `oldSelf` to its
 * old value on an update: a rule that reads `oldSelf` is a transition rule, run only when the old
 * value exists); a rule that is not true is a field error at the node (or at the rule's
 * `fieldPath`), typed by its `reason`, with its `messageExpression`, `message` or
 * `failed rule: <rule>` as detail. Both the sandbox (the CRD's server side) and the render (a
 * chart's values, which are the CRD's spec schema) use it, so a CR fails the same rule with the
 * same message in both places.
 */
import { ParseError, type Environment } from '@marcbachmann/cel-js'
import { celEnvironment } from './library.ts'

/** One entry of `x-kubernetes-validations` (apiextensions/v1 ValidationRule). */
export interface ValidationRule {
  rule?: string
  message?: string
  messageExpression?: string
  reason?: string
  fieldPath?: string
  optionalOldSelf?: boolean
}

/** The parts of a structural schema node that rules and their evaluation read. */
export interface RuleSchema {
  type?: string
  properties?: Record<string, RuleSchema>
  additionalProperties?: RuleSchema | boolean
  items?: RuleSchema
  'x-kubernetes-validations'?: ValidationRule[]
  'x-kubernetes-list-type'?: string
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-map-type'?: string
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
}

/** The reasons a rule may give its error (apiextensions' supportedValidationReason, sorted). */
export const RULE_REASONS = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired']

/** A field error of a rule, before it is worded: field.Invalid / Forbidden / Required / Duplicate. */
export interface RuleFailure {
  field: string
  reason: string
  /** The bad value; absent where field.OmitValueType stands for it (rules of objects and lists). */
  value?: { v: unknown }
  detail: string
}

/** The errors of a validation and those ratcheted away (an update that left the node unchanged). */
export interface RuleResult {
  errors: RuleFailure[]
  ratcheted: RuleFailure[]
}

interface Compiled {
  rule: ValidationRule
  program?: (ctx: Record<string, unknown>) => unknown
  message?: (ctx: Record<string, unknown>) => unknown
  usesOldSelf: boolean
  /** Where the error goes, below the node (ValidFieldPath's normalised form). */
  fieldPath: string
  error?: string
  messageError?: string
  fieldPathError?: string
}

/** Rules compiled to run (parsed), and compiled as a CRD's creation checks them (type-checked too). */
const compiledOf = { run: new WeakMap<RuleSchema, Compiled[]>(), check: new WeakMap<RuleSchema, Compiled[]>() }

type Ast = { op: string; args: unknown; pos?: number }

function isAst(x: unknown): x is Ast {
  return typeof x === 'object' && x !== null && typeof (x as Ast).op === 'string'
}

/** cel-go's rendering of an issue: `ERROR: <input>:line:column: message` and the line with a caret. */
function celGoIssue(src: string, offset: number, message: string): string {
  const before = src.slice(0, offset)
  const line = before.split('\n').length
  const column = offset - (before.lastIndexOf('\n') + 1)
  const text = src.split('\n')[line - 1] ?? ''
  return `ERROR: <input>:${line}:${column + 1}: ${message}\n | ${text}\n | ${'.'.repeat(column)}^`
}

function firstLine(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err)
  return m.split('\n')[0]!.trim()
}

/**
 * The schema a select lands on, checking each field against the schema as cel-go's type checker
 * does with the schema's declared types (`undefined field 'x'`); undefined where the type is open.
 */
function selects(node: unknown, root: RuleSchema, src: string, issues: string[], bound: Set<string>): RuleSchema | undefined {
  if (Array.isArray(node)) {
    for (const n of node) selects(n, root, src, issues, bound)
    return undefined
  }
  if (!isAst(node)) return undefined
  if (node.op === 'id') return (node.args === 'self' || node.args === 'oldSelf') && !bound.has(node.args) ? root : undefined
  if ((node.op === '.' || node.op === '.?') && Array.isArray(node.args) && typeof node.args[1] === 'string') {
    const parent = selects(node.args[0], root, src, issues, bound)
    const name = node.args[1]
    if (!parent || parent['x-kubernetes-preserve-unknown-fields'] === true) return undefined
    if (parent.properties) {
      const s = Object.hasOwn(parent.properties, name) ? parent.properties[name] : undefined
      if (!s) issues.push(celGoIssue(src, Math.max(0, (node.pos ?? 0) - node.op.length), `undefined field '${name}'`))
      return s
    }
    return typeof parent.additionalProperties === 'object' ? parent.additionalProperties : undefined
  }
  if (node.op === 'rcall' && Array.isArray(node.args)) {
    // A macro's iteration variable shadows nothing we check, but may be named self.
    const [, target, args] = node.args as [string, unknown, unknown[]]
    selects(target, root, src, issues, bound)
    const inner = new Set(bound)
    if (Array.isArray(args) && isAst(args[0]) && args[0].op === 'id' && typeof args[0].args === 'string') inner.add(args[0].args)
    selects(args, root, src, issues, inner)
    return undefined
  }
  selects(node.args, root, src, issues, bound)
  return undefined
}

function usesOldSelf(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(usesOldSelf)
  if (!isAst(node)) return false
  if (node.op === 'id') return node.args === 'oldSelf'
  return usesOldSelf(node.args)
}

/**
 * Compiles one expression: a parse error is a compile error, and when `check`ed a type error or an
 * undefined field too (what the API server refuses at the CRD's creation: running a rule needs
 * only the parse, and checking costs as much again).
 */
function compileExpression(env: Environment, src: string, schema: RuleSchema, want: 'bool' | 'string', check: boolean): { fn?: (ctx: Record<string, unknown>) => unknown; ast?: unknown; error?: string } {
  let fn: ((ctx: Record<string, unknown>) => unknown) & { ast?: unknown }
  try {
    fn = env.parse(src) as typeof fn
  } catch (err) {
    const offset = (err as { range?: { start?: number } }).range?.start ?? 0
    const syntax = err instanceof ParseError ? 'Syntax error: ' : ''
    return { error: celGoIssue(src, offset, `${syntax}${firstLine(err)}`) }
  }
  if (!check) return { fn, ast: fn.ast }
  const issues: string[] = []
  selects(fn.ast, schema, src, issues, new Set())
  if (issues.length > 0) return { error: issues.join('\n') }
  const checked = env.check(src) as { valid: boolean; type?: string; error?: { message: string; range?: { start?: number } } }
  if (!checked.valid) return { error: celGoIssue(src, checked.error?.range?.start ?? 0, firstLine(checked.error)) }
  if (checked.type !== want && checked.type !== 'dyn') return { fn, ast: fn.ast, error: want }
  return { fn, ast: fn.ast }
}

/**
 * ValidFieldPath: a JSON path of fields (`.a.b`) and map keys (`['k']`) that exists in the
 * schema, as field.Path prints it (`a.b`, `a[k]`); an error says why not.
 */
export function normalizeFieldPath(path: string, schema: RuleSchema): { path: string } | { error: string } {
  const tokens = path.match(/'(?:[^'\\]|\\.)*'|[.[\]]|[^.[\]']+/g) ?? []
  let out = ''
  let s: RuleSchema | undefined = schema
  const step = (name: string): string | undefined => {
    if (!s) return 'does not refer to a valid field'
    if (s.properties) {
      if (!Object.hasOwn(s.properties, name)) return 'does not refer to a valid field'
      out += out === '' ? name : `.${name}`
      s = s.properties[name]
      return undefined
    }
    if (typeof s.additionalProperties === 'object') {
      out += `[${name}]`
      s = s.additionalProperties
      return undefined
    }
    return 'does not refer to a valid field'
  }
  for (let i = 0; i < tokens.length; i++) {
    const tok = tokens[i]!
    if (tok === '.') {
      const name = tokens[++i]
      if (name === undefined) return { error: 'unexpected end of JSON path' }
      const err = step(name)
      if (err) return { error: err }
    } else if (tok === '[') {
      const quoted = tokens[++i]
      if (quoted === undefined) return { error: 'unexpected end of JSON path' }
      if (quoted.length < 2 || !quoted.startsWith("'") || !quoted.endsWith("'")) return { error: `expected single quoted string but got ${quoted}` }
      const err = step(quoted.slice(1, -1).replace(/\\(.)/g, '$1'))
      if (err) return { error: err }
      const close = tokens[++i]
      if (close === undefined) return { error: 'unexpected end of JSON path' }
      if (close !== ']') return { error: `expected ] but got ${close}` }
    } else {
      return { error: `expected [ or . but got: ${tok}` }
    }
  }
  return { path: out }
}

/** The rules of one schema node, compiled once per node object (`check`: as a CRD's creation checks them). */
export function compiledRules(schema: RuleSchema, check = true): Compiled[] {
  const cache = check ? compiledOf.check : compiledOf.run
  const cached = cache.get(schema)
  if (cached) return cached
  const rules = schema['x-kubernetes-validations'] ?? []
  const out: Compiled[] = []
  if (rules.length > 0) {
    const env = celEnvironment()
    for (const rule of rules) {
      const c: Compiled = { rule, usesOldSelf: false, fieldPath: '' }
      const src = rule.rule ?? ''
      if (src.trim() !== '') {
        const r = compileExpression(env, src, schema, 'bool', check)
        if (r.error === 'bool') c.error = 'cel expression must evaluate to a bool'
        else if (r.error) c.error = `compilation failed: ${r.error}`
        else c.program = r.fn
        c.usesOldSelf = usesOldSelf(r.ast)
      }
      if (rule.messageExpression !== undefined && rule.messageExpression.trim() !== '') {
        const m = compileExpression(env, rule.messageExpression, schema, 'string', check)
        if (m.error === 'string') c.messageError = 'messageExpression must evaluate to a string'
        else if (m.error) c.messageError = `messageExpression compilation failed: ${m.error}`
        else c.message = m.fn
      }
      if (rule.fieldPath !== undefined && rule.fieldPath !== '') {
        const p = normalizeFieldPath(rule.fieldPath, schema)
        if ('path' in p) c.fieldPath = p.path
        else c.fieldPathError = p.error
      }
      out.push(c)
    }
  }
  cache.set(schema, out)
  return out
}

/** The rule as error messages quote it: its message if it has one, else its source. */
function ruleErrorString(rule: ValidationRule): string {
  return rule.message && rule.message.length > 0 ? rule.message.trim() : (rule.rule ?? '').trim()
}

function ruleMessageOrDefault(rule: ValidationRule): string {
  return rule.message && rule.message.length > 0 ? rule.message.trim() : `failed rule: ${ruleErrorString(rule)}`
}

/** A decoded JSON value as CEL sees it through its schema: integers are int, `number`s double. */
export function toCel(value: unknown, schema: RuleSchema | undefined): unknown {
  if (typeof value === 'number') return Number.isInteger(value) && schema?.type !== 'number' ? BigInt(value) : value
  if (Array.isArray(value)) return value.map((v) => toCel(v, schema?.items))
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      const s = schema?.properties && Object.hasOwn(schema.properties, k) ? schema.properties[k] : typeof schema?.additionalProperties === 'object' ? schema.additionalProperties : undefined
      out[k] = toCel(v, s)
    }
    return out
  }
  return value
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

function child(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`
}

/** A JSON value's type name as field.Invalid shows the schema's type for errors of evaluation. */
function schemaType(s: RuleSchema): string {
  return s.type ?? ''
}

function messageOf(c: Compiled, ctx: Record<string, unknown>): string | undefined {
  if (!c.message) return undefined
  try {
    const m = c.message(ctx)
    if (typeof m !== 'string') return undefined
    const t = m.trim()
    // MaxEvaluatedMessageExpressionSizeBytes; no line breaks; not empty.
    if (t === '' || Buffer.byteLength(t) > 5 * 1024 || /\n/.test(t)) return undefined
    return t
  } catch {
    // evalMessageExpression: a failure falls back to the rule's message (logged by the server).
    return undefined
  }
}

function evaluateNode(s: RuleSchema, value: unknown, old: unknown, path: string, unchanged: boolean, out: RuleResult): void {
  const rules = compiledRules(s, false)
  if (rules.length === 0) return
  const self = toCel(value, s)
  const ctx: Record<string, unknown> = { self }
  if (old !== undefined) ctx.oldSelf = toCel(old, s)
  for (const c of rules) {
    if (c.error !== undefined) {
      out.errors.push({ field: path, reason: 'FieldValueInvalid', value: { v: schemaType(s) }, detail: `rule compile error: ${c.error}` })
      continue
    }
    if (!c.program) continue
    if (c.usesOldSelf && old === undefined) continue
    let result: unknown
    try {
      result = c.program(ctx)
    } catch (err) {
      const msg = firstLine(err)
      const text = msg.charAt(0).toLowerCase() + msg.slice(1)
      const detail = /overload/i.test(msg)
        ? `'${text}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleErrorString(c.rule)}`
        : `${text} evaluating rule: ${ruleErrorString(c.rule)}`
      out.errors.push({ field: path, reason: 'FieldValueInvalid', value: { v: schemaType(s) }, detail })
      continue
    }
    if (result === true) continue
    const field = c.fieldPath === '' ? path : child(path, c.fieldPath)
    const detail = messageOf(c, ctx) ?? ruleMessageOrDefault(c.rule)
    const reason = c.rule.reason && RULE_REASONS.includes(c.rule.reason) ? c.rule.reason : 'FieldValueInvalid'
    const failure: RuleFailure = { field, reason, detail }
    if (s.type !== 'object' && s.type !== 'array') failure.value = { v: value }
    ;(!c.usesOldSelf && unchanged ? out.ratcheted : out.errors).push(failure)
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** How a walk goes: whether it ratchets (an update), and the nodes whose rules it must not run. */
interface Walk {
  ratchet: boolean
  blocked?: (pointer: string) => boolean
  out: RuleResult
}

function walk(s: RuleSchema, value: unknown, old: unknown, path: string, pointer: string, w: Walk, parentUnchanged: boolean): void {
  // Rules only see values: a null or absent field is judged by its parent's rules.
  if (value === null || value === undefined) return
  const unchanged = w.ratchet && (parentUnchanged || (old !== undefined && deepEqual(value, old)))
  if (!w.blocked?.(pointer)) evaluateNode(s, value, old, path, unchanged, w.out)
  if (Array.isArray(value)) {
    if (!s.items) return
    // Only the items of a map-list correlate with old ones, by their keys (validateArray's makeMapList).
    const keys = s['x-kubernetes-list-type'] === 'map' ? s['x-kubernetes-list-map-keys'] ?? [] : undefined
    const olds = keys && Array.isArray(old) ? old.filter(isObject) : []
    value.forEach((item, i) => {
      const match = keys && isObject(item) ? olds.find((o) => keys.every((k) => deepEqual(o[k], item[k]))) : undefined
      walk(s.items!, item, match, `${path}[${i}]`, `${pointer}/${i}`, w, unchanged)
    })
    return
  }
  if (!isObject(value)) return
  const oldMap = isObject(old) ? old : undefined
  for (const [k, v] of Object.entries(value)) {
    if (s.properties && Object.hasOwn(s.properties, k)) {
      walk(s.properties[k]!, v, oldMap?.[k], child(path, k), `${pointer}/${escape(k)}`, w, unchanged)
    } else if (typeof s.additionalProperties === 'object') {
      // An atomic map does not correlate its values with the old ones (MapIsCorrelatable).
      const correlates = s['x-kubernetes-map-type'] !== 'atomic'
      walk(s.additionalProperties, v, correlates ? oldMap?.[k] : undefined, `${path}[${k}]`, `${pointer}/${escape(k)}`, w, unchanged)
    }
  }
}

/**
 * Runs every rule of the schema over a value (and its old value on an update), from `path`
 * (`''` for a resource's root, `'spec'` for a spec schema). On an update, the errors of a node
 * equal to its old value are ratcheted (CRDValidationRatcheting): the server only warns of them.
 * `blocked` names nodes (by JSON pointer) whose rules are not run, such as those holding a value
 * of the wrong type.
 */
export function validateRules(schema: RuleSchema, value: unknown, old: unknown, path = '', blocked?: (pointer: string) => boolean): RuleResult {
  const out: RuleResult = { errors: [], ratcheted: [] }
  walk(schema, value, old, path, '', blocked ? { ratchet: old !== undefined, blocked, out } : { ratchet: old !== undefined, out }, false)
  return out
}

function escape(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1')
}

/** Whether a schema declares any rule, anywhere. */
export function hasRules(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(hasRules)
  if (!isObject(schema)) return false
  if (Array.isArray(schema['x-kubernetes-validations']) && schema['x-kubernetes-validations'].length > 0) return true
  return Object.values(schema).some(hasRules)
}
