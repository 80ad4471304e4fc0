/**
 * Secret validation as kube-apiserver 1.34 does it (kubernetes pkg/apis/core/validation/validation.go
 * `ValidateSecret`, run by `ValidateSecretUpdate` on update too): data keys are config-map keys,
 * the decoded data totals at most 1 MiB (`core.MaxSecretSize`), and each well-known type has the
 * keys it needs — with upstream's field paths and messages. `stringData` has been merged into
 * `data` and an empty type defaulted to Opaque before this runs (the registry strategy's
 * PrepareForCreate / PrepareForUpdate and `SetDefaults_Secret`).
 */
import { isConfigMapKey } from '../names.ts'
import type { FieldCause, KubeObject } from '../object.ts'

/** `core.MaxSecretSize`: the decoded `data` of a Secret (and of a ConfigMap) totals at most 1 MiB. */
export const maxSecretSize = 1024 * 1024

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const invalid = (field: string, value: string, detail: string): FieldCause => ({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${value}: ${detail}` })
const required = (field: string): FieldCause => ({ reason: 'FieldValueRequired', field, message: 'Required value' })

/** ValidateSecret's checks after ValidateObjectMeta (metadata is {@link validateMetadata}'s), in upstream's order. */
export function validateSecretData(obj: KubeObject): FieldCause[] {
  const out: FieldCause[] = []
  const data = isObj(obj.data) ? obj.data : {}
  const bytes = new Map<string, Buffer>()
  let total = 0
  for (const [key, value] of Object.entries(data)) {
    for (const msg of isConfigMapKey(key)) out.push(invalid(`data[${key}]`, JSON.stringify(key), msg))
    const b = Buffer.from(typeof value === 'string' ? value : '', 'base64')
    bytes.set(key, b)
    total += b.length
  }
  if (total > maxSecretSize) out.push({ reason: 'FieldValueTooLong', field: 'data', message: `Too long: may not be more than ${maxSecretSize} bytes` })
  const has = (k: string): boolean => bytes.has(k)
  switch (typeof obj.type === 'string' ? obj.type : '') {
    case 'kubernetes.io/service-account-token': {
      // Only the annotation is required; the token controller fills in the rest.
      const name = isObj(obj.metadata.annotations) ? obj.metadata.annotations['kubernetes.io/service-account.name'] : undefined
      if (typeof name !== 'string' || name === '') out.push(required('metadata.annotations[kubernetes.io/service-account.name]'))
      break
    }
    case 'kubernetes.io/dockercfg':
    case 'kubernetes.io/dockerconfigjson': {
      const key = obj.type === 'kubernetes.io/dockercfg' ? '.dockercfg' : '.dockerconfigjson'
      const b = bytes.get(key)
      if (b === undefined) {
        out.push(required(`data[${key}]`))
        break
      }
      const err = goUnmarshalMapError(b)
      if (err) out.push(invalid(`data[${key}]`, '"<secret contents redacted>"', err))
      break
    }
    case 'kubernetes.io/basic-auth':
      // username or password may be empty, but one of them must be present.
      if (!has('username') && !has('password')) out.push(required('data[username]'), required('data[password]'))
      break
    case 'kubernetes.io/ssh-auth':
      if ((bytes.get('ssh-privatekey')?.length ?? 0) === 0) out.push(required('data[ssh-privatekey]'))
      break
    case 'kubernetes.io/tls':
      if (!has('tls.crt')) out.push(required('data[tls.crt]'))
      if (!has('tls.key')) out.push(required('data[tls.key]'))
      break
    default:
      break
  }
  return out
}

/** Go's `quoteChar` (encoding/json scanner.go) for one input byte. */
function quoteChar(c: number): string {
  if (c === 0x27) return "'\\''"
  if (c === 0x22) return '\'"\''
  const named: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0x5c: '\\\\' }
  if (named[c]) return `'${named[c]}'`
  if (c < 0x20 || c === 0x7f) return `'\\x${c.toString(16).padStart(2, '0')}'`
  if (c >= 0x80 && c < 0xa0) return `'\\u${c.toString(16).padStart(4, '0')}'`
  return `'${String.fromCharCode(c)}'`
}

class JsonSyntax extends Error {}

/**
 * The error of Go's `json.Unmarshal(b, &map[string]interface{}{})`, or undefined when it
 * succeeds: first encoding/json's syntax check (scanner.go messages, `unexpected end of JSON
 * input` on truncation), then a top-level value that is not an object or null
 * (`json: cannot unmarshal array into Go value of type map[string]interface {}`).
 */
export function goUnmarshalMapError(b: Uint8Array): string | undefined {
  let i = 0
  /** The byte at the scanner's position, -1 at the end. */
  const cur = (): number => b[i] ?? -1
  const fail = (context: string): never => {
    if (i >= b.length) throw new JsonSyntax('unexpected end of JSON input')
    throw new JsonSyntax(`invalid character ${quoteChar(cur())} ${context}`)
  }
  const ws = (): void => {
    while (i < b.length && (cur() === 0x20 || cur() === 0x09 || cur() === 0x0a || cur() === 0x0d)) i++
  }
  const digit = (): boolean => cur() >= 0x30 && cur() <= 0x39
  const str = (): void => {
    i++ // opening quote
    for (;;) {
      if (i >= b.length) fail('')
      const c = cur()
      if (c === 0x22) {
        i++
        return
      }
      if (c < 0x20) fail('in string literal')
      if (c === 0x5c) {
        i++
        if (i >= b.length) fail('')
        if (cur() === 0x75) {
          i++
          for (let k = 0; k < 4; k++, i++) if (i >= b.length || !/[0-9a-fA-F]/.test(String.fromCharCode(cur()))) fail('in \\u hexadecimal character escape')
          continue
        }
        if (!'bfnrt\\/"'.includes(String.fromCharCode(cur()))) fail('in string escape code')
      }
      i++
    }
  }
  const num = (): void => {
    if (cur() === 0x2d) {
      i++
      if (!digit()) fail('in numeric literal')
    }
    if (cur() === 0x30) i++
    else while (digit()) i++
    if (cur() === 0x2e) {
      i++
      if (!digit()) fail('after decimal point in numeric literal')
      while (digit()) i++
    }
    if (cur() === 0x65 || cur() === 0x45) {
      i++
      if (cur() === 0x2b || cur() === 0x2d) i++
      if (!digit()) fail('in exponent of numeric literal')
      while (digit()) i++
    }
  }
  const literal = (word: string): void => {
    i++
    for (const ch of word.slice(1)) {
      if (i >= b.length || cur() !== ch.charCodeAt(0)) fail(`in literal ${word} (expecting '${ch}')`)
      i++
    }
  }
  const value = (): string => {
    ws()
    if (i >= b.length) fail('')
    const c = cur()
    if (c === 0x7b) {
      i++
      ws()
      if (cur() === 0x7d) {
        i++
        return 'object'
      }
      for (;;) {
        ws()
        if (cur() !== 0x22) fail('looking for beginning of object key string')
        str()
        ws()
        if (cur() !== 0x3a) fail('after object key')
        i++
        value()
        ws()
        if (cur() === 0x2c) {
          i++
          continue
        }
        if (cur() === 0x7d) {
          i++
          return 'object'
        }
        fail('after object key:value pair')
      }
    }
    if (c === 0x5b) {
      i++
      ws()
      if (cur() === 0x5d) {
        i++
        return 'array'
      }
      for (;;) {
        value()
        ws()
        if (cur() === 0x2c) {
          i++
          continue
        }
        if (cur() === 0x5d) {
          i++
          return 'array'
        }
        fail('after array element')
      }
    }
    if (c === 0x22) {
      str()
      return 'string'
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      num()
      return 'number'
    }
    if (c === 0x74) return (literal('true'), 'bool')
    if (c === 0x66) return (literal('false'), 'bool')
    if (c === 0x6e) return (literal('null'), 'null')
    return fail('looking for beginning of value')
  }
  try {
    const kind = value()
    ws()
    if (i < b.length) fail('after top-level value')
    return kind === 'object' || kind === 'null' ? undefined : `json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`
  } catch (e) {
    if (e instanceof JsonSyntax) return e.message
    throw e
  }
}

/**
 * ValidateConfigMap's checks after ValidateObjectMeta (kubernetes pkg/apis/core/validation/validation.go):
 * the keys of `data` and `binaryData` are config-map keys, and no key is in both. (Its size limit,
 * reported against the whole object, is not checked: the sandbox's request limit comes first.)
 */
export function validateConfigMapData(obj: KubeObject): FieldCause[] {
  const out: FieldCause[] = []
  const data = isObj(obj.data) ? obj.data : {}
  const binary = isObj(obj.binaryData) ? obj.binaryData : {}
  for (const key of Object.keys(data)) for (const msg of isConfigMapKey(key)) out.push(invalid(`data[${key}]`, JSON.stringify(key), msg))
  for (const key of Object.keys(binary)) {
    for (const msg of isConfigMapKey(key)) out.push(invalid(`binaryData[${key}]`, JSON.stringify(key), msg))
    if (Object.hasOwn(data, key)) out.push(invalid(`binaryData[${key}]`, JSON.stringify(key), 'duplicate key in both data and binaryData'))
  }
  return out
}
