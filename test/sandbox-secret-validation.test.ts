/**
 * Secrets as kube-apiserver 1.34 validates them (kubernetes pkg/apis/core/validation/validation.go
 * ValidateSecret / ValidateSecretUpdate): config-map keys, the 1 MiB total, and the keys each
 * well-known type needs — refused with 422 and upstream's field paths and messages, on create,
 * update, patch and server-side apply, and through a real kubectl.
 */
import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { createCluster, startSandbox } from '../operator/sandbox/index.ts'
import { goUnmarshalMapError } from '../operator/kube/builtin/secret.ts'
import { sandboxCert, sandboxKey } from '../operator/sandbox/tls.ts'
import { call, type Result } from './support/sandbox-requests.ts'
import { kubectlPath } from './support/tools.ts'
import { tempDir } from './support/tmp.ts'

const S = '/api/v1/namespaces/default/secrets'
const b64 = (s: string): string => Buffer.from(s).toString('base64')

function secret(name: string, fields: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name }, ...fields }
}

type Cause = { field: string; message: string }

function invalid(t: Test, r: Result, name: string, causes: Cause[]): void {
  t.equal(r.status, 422, JSON.stringify(r.body))
  t.equal(r.body.reason, 'Invalid')
  t.same(r.body.details.causes.map((c: Cause) => ({ field: c.field, message: c.message })), causes)
  const listed = causes.map((c) => `${c.field}: ${c.message}`)
  t.equal(r.body.message, `Secret "${name}" is invalid: ${listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`}`)
}

const required = (field: string): Cause => ({ field, message: 'Required value' })
const keyFormat = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
const redacted = (field: string, err: string): Cause => ({ field, message: `Invalid value: "<secret contents redacted>": ${err}` })

/** Refused on create: [what, Secret fields, upstream's causes]. */
const refused: [string, Record<string, unknown>, Cause[]][] = [
  ['tls without tls.crt and tls.key', { type: 'kubernetes.io/tls', data: {} }, [required('data[tls.crt]'), required('data[tls.key]')]],
  ['tls without tls.key', { type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } }, [required('data[tls.key]')]],
  ['tls whose tls.key is only in stringData of the wrong name', { type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.keys': 'k' } }, [required('data[tls.key]')]],
  ['service-account-token without its annotation', { type: 'kubernetes.io/service-account-token' }, [required('metadata.annotations[kubernetes.io/service-account.name]')]],
  ['service-account-token with an empty annotation', { type: 'kubernetes.io/service-account-token', metadata: { name: 'x', annotations: { 'kubernetes.io/service-account.name': '' } } }, [required('metadata.annotations[kubernetes.io/service-account.name]')]],
  ['dockercfg without .dockercfg', { type: 'kubernetes.io/dockercfg', data: { '.dockerconfigjson': b64('{}') } }, [required('data[.dockercfg]')]],
  ['dockercfg that is not JSON', { type: 'kubernetes.io/dockercfg', stringData: { '.dockercfg': 'not json' } }, [redacted('data[.dockercfg]', "invalid character 'o' in literal null (expecting 'u')")]],
  ['dockerconfigjson without .dockerconfigjson', { type: 'kubernetes.io/dockerconfigjson' }, [required('data[.dockerconfigjson]')]],
  ['dockerconfigjson cut short', { type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': '{"auths":' } }, [redacted('data[.dockerconfigjson]', 'unexpected end of JSON input')]],
  ['dockerconfigjson with a trailing comma', { type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': '{"auths": {},}' } }, [redacted('data[.dockerconfigjson]', "invalid character '}' looking for beginning of object key string")]],
  ['dockerconfigjson that is an array', { type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': '[]' } }, [redacted('data[.dockerconfigjson]', 'json: cannot unmarshal array into Go value of type map[string]interface {}')]],
  ['dockerconfigjson with text after the object', { type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': '{} x' } }, [redacted('data[.dockerconfigjson]', "invalid character 'x' after top-level value")]],
  ['basic-auth without username and password', { type: 'kubernetes.io/basic-auth', data: { user: b64('u') } }, [required('data[username]'), required('data[password]')]],
  ['ssh-auth with an empty ssh-privatekey', { type: 'kubernetes.io/ssh-auth', data: { 'ssh-privatekey': '' } }, [required('data[ssh-privatekey]')]],
  ['a key with a space', { data: { 'a b': b64('1') } }, [{ field: 'data[a b]', message: `Invalid value: "a b": ${keyFormat}` }]],
  ['the key ..', { stringData: { '..': '1' } }, [{ field: 'data[..]', message: `Invalid value: "..": must not be '..'` }]],
  ['a key starting with ..', { stringData: { '..data': '1' } }, [{ field: 'data[..data]', message: `Invalid value: "..data": must not start with '..'` }]],
  ['a key longer than 253 bytes', { stringData: { ['k'.repeat(254)]: '1' } }, [{ field: `data[${'k'.repeat(254)}]`, message: `Invalid value: "${'k'.repeat(254)}": must be no more than 253 characters` }]],
  ['data over 1 MiB in total (decoded bytes)', { data: { a: Buffer.alloc(512 * 1024).toString('base64'), b: Buffer.alloc(512 * 1024 + 1).toString('base64') } }, [{ field: 'data', message: 'Too long: may not be more than 1048576 bytes' }]],
]

for (const [what, fields, causes] of refused) {
  t.test(`refused on create: ${what} (core/validation/validation.go ValidateSecret)`, async (t) => {
    const c = createCluster()
    const { metadata, ...rest } = fields
    invalid(t, call(c, `POST ${S}`, secret('x', { ...rest, ...(metadata ? { metadata } : {}) })), 'x', causes)
    t.equal(call(c, `GET ${S}/x`).status, 404, 'nothing stored')
  })
}

/** Accepted on create: [what, Secret fields]. */
const accepted: [string, Record<string, unknown>][] = [
  ['no type (defaulted to Opaque) with any valid keys', { data: { 'a.b_c-D': b64('1') } }],
  ['tls with both keys, empty', { type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' } }],
  ['tls from stringData', { type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.key': 'k' } }],
  ['service-account-token with its annotation', { type: 'kubernetes.io/service-account-token', metadata: { name: 'x', annotations: { 'kubernetes.io/service-account.name': 'default' } } }],
  ['dockercfg with a JSON object', { type: 'kubernetes.io/dockercfg', stringData: { '.dockercfg': '{"registry": {"auth": "x", "n": [1, -2.5e3, true, null]}}' } }],
  ['dockerconfigjson that is null', { type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': ' null ' } }],
  ['basic-auth with an empty password only', { type: 'kubernetes.io/basic-auth', data: { password: '' } }],
  ['ssh-auth with a key', { type: 'kubernetes.io/ssh-auth', stringData: { 'ssh-privatekey': 'k' } }],
  ['a type of its own, any data', { type: 'example.com/custom', data: {} }],
  ['exactly 1 MiB of data', { data: { a: Buffer.alloc(1024 * 1024).toString('base64') } }],
]

for (const [what, fields] of accepted) {
  t.test(`accepted on create: ${what} (core/validation/validation.go ValidateSecret)`, async (t) => {
    const c = createCluster()
    const { metadata, ...rest } = fields
    const r = call(c, `POST ${S}`, secret('x', { ...rest, ...(metadata ? { metadata } : {}) }))
    t.equal(r.status, 201, r.status === 201 ? 'created' : JSON.stringify(r.body))
    t.equal(r.body.type, typeof fields.type === 'string' ? fields.type : 'Opaque')
    t.notOk('stringData' in r.body, 'stringData is merged into data')
  })
}

t.test('a docker config that json.Unmarshal into map[string]interface{} refuses gets encoding/json scanner.go / decode.go error text', async (t) => {
  const cases: [string, string | undefined][] = [
    ['', 'unexpected end of JSON input'],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
    ['{"a":[1 2]}', "invalid character '2' after array element"],
    ['{"a":"\\x"}', "invalid character 'x' in string escape code"],
    ['{"a":"\\u12x4"}', "invalid character 'x' in \\u hexadecimal character escape"],
    ['{"a":"b\tc"}', "invalid character '\\t' in string literal"],
    ['{"a":trx}', "invalid character 'x' in literal true (expecting 'u')"],
    ['{"a":1.a}', "invalid character 'a' after decimal point in numeric literal"],
    ['{"a":1e+}', "invalid character '}' in exponent of numeric literal"],
    ['{"a":-x}', "invalid character 'x' in numeric literal"],
    ["{'a':1}", "invalid character '\\'' looking for beginning of object key string"],
    ['01', "invalid character '1' after top-level value"],
    ['"abc', 'unexpected end of JSON input'],
    ['"abc"', 'json: cannot unmarshal string into Go value of type map[string]interface {}'],
    ['-1.5e3', 'json: cannot unmarshal number into Go value of type map[string]interface {}'],
    ['false', 'json: cannot unmarshal bool into Go value of type map[string]interface {}'],
    ['null', undefined],
    [' {"a": {"b": [true, null, "\\u00e9\\n"]}} \n', undefined],
  ]
  for (const [input, err] of cases) t.equal(goUnmarshalMapError(Buffer.from(input)), err, JSON.stringify(input))
})

t.test('update, patch and server-side apply go through ValidateSecretUpdate, which runs ValidateSecret (core/validation/validation.go)', async (t) => {
  const c = createCluster()
  const tls = secret('tls', { type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.key': 'k' } })
  t.equal(call(c, `POST ${S}`, tls).status, 201)
  invalid(t, call(c, `PATCH ${S}/tls`, { data: { 'tls.key': null } }), 'tls', [required('data[tls.key]')])
  invalid(t, call(c, `PUT ${S}/tls`, secret('tls', { type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } })), 'tls', [required('data[tls.key]')])
  invalid(t, call(c, `PATCH ${S}/tls`, { data: { 'bad key': b64('1') } }), 'tls', [{ field: 'data[bad key]', message: `Invalid value: "bad key": ${keyFormat}` }])
  const applied = call(c, `PATCH ${S}/ssa?fieldManager=chart&force=true`, secret('ssa', { type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } }), { type: 'apply' })
  invalid(t, applied, 'ssa', [required('data[tls.key]')])
  t.equal(call(c, `GET ${S}/ssa`).status, 404, 'the refused apply created nothing')
  t.equal(call(c, `PATCH ${S}/tls`, { stringData: { 'tls.key': 'k2' } }).status, 200, 'a valid change is stored')
  // A type change is refused for every Secret, not only immutable ones; an empty type is
  // defaulted to Opaque first (core/v1/defaults.go SetDefaults_Secret).
  invalid(t, call(c, `PUT ${S}/tls`, secret('tls', { type: '', data: { 'tls.crt': b64('c'), 'tls.key': b64('k') } })), 'tls', [{ field: 'type', message: 'Invalid value: "Opaque": field is immutable' }])
  invalid(t, call(c, `PATCH ${S}/tls`, { type: 'kubernetes.io/basic-auth' }), 'tls', [{ field: 'type', message: 'Invalid value: "kubernetes.io/basic-auth": field is immutable' }, required('data[username]'), required('data[password]')])
})

t.test('real kubectl: create secret tls is accepted, kubectl apply of a tls Secret without tls.key is refused with upstream\'s message', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const dir = tempDir('secret-tls-')
  writeFileSync(join(dir, 'tls.crt'), sandboxCert)
  writeFileSync(join(dir, 'tls.key'), sandboxKey)
  const kubectl = async (args: string[], input?: string): Promise<{ code: number; out: string; err: string }> => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    run.child.stdin?.end(input ?? '')
    try {
      const r = await run
      return { code: 0, out: r.stdout, err: r.stderr }
    } catch (e) {
      const x = e as { code?: number; stdout?: string; stderr?: string }
      return { code: x.code ?? -1, out: x.stdout ?? '', err: x.stderr ?? '' }
    }
  }
  const created = await kubectl(['create', 'secret', 'tls', 'web', '--cert', join(dir, 'tls.crt'), '--key', join(dir, 'tls.key')])
  t.equal(created.code, 0, created.err)
  const got = JSON.parse((await kubectl(['get', 'secret/web', '-o', 'json'])).out) as { type: string; data: Record<string, string> }
  t.equal(got.type, 'kubernetes.io/tls')
  t.same(Object.keys(got.data).sort(), ['tls.crt', 'tls.key'])
  const bad = JSON.stringify(secret('half', { type: 'kubernetes.io/tls', metadata: { name: 'half', namespace: 'default' }, stringData: { 'tls.crt': 'c' } }))
  for (const args of [['apply', '-f', '-'], ['apply', '--server-side', '-f', '-']]) {
    const r = await kubectl(args, bad)
    t.not(r.code, 0, args.join(' '))
    t.match(r.err, 'The Secret "half" is invalid: data[tls.key]: Required value', args.join(' '))
  }
  t.not((await kubectl(['get', 'secret/half'])).code, 0, 'not stored')
})
