/**
 * operator/kube/openapi-validate.ts case by case: the Go decoder's wording for each schema type
 * (sigs.k8s.io/json internal/golang/encoding/json/decode.go), encoding/base64's CorruptInputError
 * offsets (base64.go `decodeQuantum`), structured-merge-diff's typed/validate.go and helpers.go
 * errors for lists, sets and maps; and operator/sandbox/openapi-proto.ts's encoding of the
 * Swagger 2.0 constructs the served document does not use.
 */
import t from 'tap'
import YAML from 'yaml'
import { decodeError, decodeProblem, decoding, unknownFields } from '../operator/kube/openapi-validate.ts'
import { applyErrors, goFloat } from '../operator/kube/openapi-apply.ts'
import { openapiV2Protobuf } from '../operator/sandbox/openapi-proto.ts'

const deploy = (spec: Record<string, unknown>, meta: Record<string, unknown> = {}) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', ...meta }, spec })
const container = (c: Record<string, unknown>) => deploy({ template: { spec: { containers: [{ name: 'c', ...c }] } } })

t.test('decode.go: each schema type named as reflect names the Go type', async (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [deploy({ paused: 'yes' }), 'json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool'],
    [deploy({}, { generation: 'x' }), 'json: cannot unmarshal string into Go struct field ObjectMeta.metadata.generation of type int64'],
    [deploy({}, { generation: 1.5 }), 'json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64'],
    [deploy({}, { labels: 'a=b' }), 'json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string'],
    [deploy({}, { uid: 5 }), 'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type types.UID'],
    [deploy({ selector: [] }), 'json: cannot unmarshal array into Go struct field DeploymentSpec.spec.selector of type v1.LabelSelector'],
    [container({ args: 'memcached -m 64' }), 'json: cannot unmarshal string into Go struct field Container.spec.template.spec.containers.args of type []string'],
    [container({ args: [1] }), 'json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.args of type string'],
    [container({ securityContext: { capabilities: { add: [true] } } }), 'json: cannot unmarshal bool into Go struct field Capabilities.spec.template.spec.containers.securityContext.capabilities.add of type v1.Capability'],
    [container({ resources: { limits: [] } }), 'json: cannot unmarshal array into Go struct field ResourceRequirements.spec.template.spec.containers.resources.limits of type v1.ResourceList'],
    [container({ resources: 'big' }), 'json: cannot unmarshal string into Go struct field Container.spec.template.spec.containers.resources of type v1.ResourceRequirements'],
    [container({ resources: { limits: 'big' } }), 'json: cannot unmarshal string into Go struct field ResourceRequirements.spec.template.spec.containers.resources.limits of type v1.ResourceList'],
    [container({ resources: { limits: { cpu: true } } }), "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
  ]
  for (const [obj, message] of cases) t.equal(decodeError('apps', 'v1', 'Deployment', obj), message, message)
  t.same(decodeProblem('apps', 'v1', 'Deployment', container({ args: ['a', 1] })), { path: 'spec.template.spec.containers[0].args[1]', message: 'json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.args of type string' })
  t.equal(decodeError('apps', 'v1', 'Deployment', deploy({ replicas: null, selector: null })), undefined, 'null decodes into anything')
  t.equal(decodeError('apps', 'v1', 'Deployment', deploy({}, { labels: { a: 'b' }, managedFields: [{ fieldsV1: { 'f:a': {} } }] })), undefined, 'FieldsV1 holds any JSON')
  t.equal(decodeError('example.com', 'v1', 'Widget', {}), undefined, 'a kind without a schema')
  t.equal(decodeError('', 'v1', 'Service', { spec: { ports: [{ targetPort: {} }] } }), 'json: cannot unmarshal object into Go value of type int32')
  t.equal(decodeError('', 'v1', 'Service', { spec: { ports: [{ targetPort: 2 ** 31 }] } }), 'json: cannot unmarshal number 2147483648 into Go value of type int32')
})

t.test('base64.go decodeQuantum: the offsets of a CorruptInputError', async (t) => {
  const at = (s: string) => decodeError('', 'v1', 'Secret', { data: { a: s } })
  t.equal(at('YWJj'), undefined)
  t.equal(at(''), undefined)
  t.equal(at('YQ=='), undefined)
  t.equal(at('YWI='), undefined)
  t.equal(at('YQ==\r\n'), undefined, 'newlines after the padding')
  t.equal(at('YW\nJj'), undefined, 'newlines inside')
  t.equal(at('Y'), 'illegal base64 data at input byte 0', 'one byte of a quantum')
  t.equal(at('YQ='), 'illegal base64 data at input byte 3', 'not enough padding')
  t.equal(at('YQ=x'), 'illegal base64 data at input byte 2', 'incorrect padding')
  t.equal(at('=YWJ'), 'illegal base64 data at input byte 0', 'padding first')
  t.equal(at('YWJj!'), 'illegal base64 data at input byte 4')
})

t.test('unknownFields: paths in the order of the document, removal, free-form objects kept', async (t) => {
  const obj = deploy({ replicass: 1, template: { spec: { containers: [{ name: 'c', imagee: 'x' }] } } }, { annotations: { any: 'x' } }) as Record<string, any>
  t.same(unknownFields('apps', 'v1', 'Deployment', obj, false), ['spec.replicass', 'spec.template.spec.containers[0].imagee'])
  t.ok('replicass' in obj.spec, 'reported only')
  t.same(unknownFields('apps', 'v1', 'Deployment', obj, true), ['spec.replicass', 'spec.template.spec.containers[0].imagee'])
  t.notOk('replicass' in obj.spec, 'removed')
  t.equal(unknownFields('example.com', 'v1', 'Widget', {}, false), undefined)
  t.same(unknownFields('', 'v1', 'ConfigMap', { data: { a: 'x' }, metadata: { managedFields: [{ fieldsV1: { 'f:data': {} } }] } }, false), [])
})

t.test('decoding counts the fields unknownFields would find, in the same walk', async (t) => {
  const objects: [string, string, string, Record<string, unknown>][] = [
    ['apps', 'v1', 'Deployment', deploy({ replicass: 1, template: { spec: { containers: [{ name: 'c', imagee: 'x' }] } } }, { annotations: { any: 'x' } })],
    ['apps', 'v1', 'Deployment', container({ image: 'x', resources: { limits: { memory: '1Gi' } }, ports: [{ containerPort: 1, protocoll: 'TCP' }] })],
    ['', 'v1', 'ConfigMap', { data: { a: 'x' }, metadata: { managedFields: [{ fieldsV1: { 'f:data': {} } }] } }],
    ['', 'v1', 'ConfigMap', { data: { a: 'x' }, datta: {}, metadata: { labelz: {} } }],
    ['apps', 'v1', 'ControllerRevision', { data: { anything: { goes: 1 } }, revision: 1 }],
  ]
  for (const [g, v, k, obj] of objects) {
    const d = decoding(g, v, k, obj)
    t.equal(d?.problem, undefined, `${k} decodes`)
    t.equal(d?.undeclared, unknownFields(g, v, k, structuredClone(obj), false)?.length, `${k}: ${JSON.stringify(obj).slice(0, 60)}`)
  }
  t.equal(decoding('example.com', 'v1', 'Widget', {}), undefined)
  t.match(decoding('', 'v1', 'ConfigMap', { data: { a: 3 } }), { problem: { path: 'data.a' } })
})

t.test('typed/validate.go: lists, sets, maps and scalars as structured-merge-diff reports them', async (t) => {
  const errs = (obj: Record<string, unknown>) => applyErrors('apps', 'v1', 'Deployment', obj)
  t.same(errs(deploy({ replicas: true })), ['.spec.replicas: expected numeric (int or float), got bool'])
  t.same(errs(deploy({ replicas: [1] })), ['.spec.replicas: expected numeric (int or float), got []interface {}'])
  t.same(errs(deploy({ paused: [1, 'a'] })), ['.spec.paused: expected boolean, got &{[1 a]}'])
  t.same(errs(deploy({ selector: 'app=x' })), ['.spec.selector: expected map, got &{app=x}'])
  t.same(errs(container({ args: 'x' })), ['.spec.template.spec.containers[name="c"].args: expected list, got &{x}'])
  t.same(errs(container({ args: ['a', { b: null, a: true }] })), ['.spec.template.spec.containers[name="c"].args[1]: expected string, got &value.valueUnstructured{Value:map[string]interface {}{"a":true, "b":interface {}(nil)}}'], 'an atomic list by index')
  t.same(errs(deploy({ template: { spec: { containers: [null, { image: 'x' }] } } })), [
    '.spec.template.spec.containers: element 0: associative list with keys may not have a null element',
    '.spec.template.spec.containers: element 1: associative list with keys has an element that omits all key fields ["name"] (and doesn\'t have default values for any key fields)',
  ])
  t.same(errs(deploy({}, { finalizers: ['a', 1, { x: 1 }, ['y'], null] })), [
    '.metadata.finalizers[=1]: expected string, got &value.valueUnstructured{Value:1}',
    ".metadata.finalizers: element 2: associative list without keys has an element that's a map type",
    '.metadata.finalizers: element 3: not supported: associative list with lists as elements',
    ".metadata.finalizers: element 4: associative list without keys has an element that's an explicit null",
  ], 'a set: items named by value')
  t.same(errs(deploy({ template: { metadata: { labels: { a: false } } } })), ['.spec.template.metadata.labels.a: expected string, got &value.valueUnstructured{Value:false}'])
  t.same(errs(deploy({ replicas: null, template: null })), [], 'null is any type')
  t.same(errs(deploy({ replicas: 1, bogus: 1, also: 2 })), ['.spec.bogus: field not declared in schema'], 'a map stops at its first undeclared field')
  t.same(applyErrors('', 'v1', 'Service', { spec: { ports: [{ port: 80, protocol: 'TCP', name: 1 }] } }), ['.spec.ports[port=80,protocol="TCP"].name: expected string, got &value.valueUnstructured{Value:1}'])
  t.same(applyErrors('', 'v1', 'ConfigMap', { metadata: { managedFields: [{ fieldsV1: 'x' }] } }), ['.metadata.managedFields[0].fieldsV1: expected map, got &{x}'])
  t.same([NaN, Infinity, -Infinity, 1e-7, -2.5].map(goFloat), ['NaN', '+Inf', '-Inf', '1e-07', '-2.5'])
})

/** Reads length-delimited fields of a protobuf message (enough to find strings). */
function strings(b: Buffer, field: number): string[] {
  const out: string[] = []
  let i = 0
  const varint = () => {
    let v = 0
    let mul = 1
    for (;;) {
      const byte = b[i++]!
      v += (byte & 0x7f) * mul
      mul *= 128
      if ((byte & 0x80) === 0) return v
    }
  }
  while (i < b.length) {
    const tag = varint()
    const wire = tag & 7
    if (wire === 0) varint()
    else if (wire === 1) i += 8
    else {
      const n = varint()
      if (tag >> 3 === field) out.push(b.subarray(i, i + n).toString('latin1'))
      i += n
    }
  }
  return out
}

t.test('openapi-proto.ts: the Swagger 2.0 constructs gnostic-models\' OpenAPIv2.proto has fields for', async (t) => {
  const doc = {
    swagger: '2.0',
    info: { title: 'T', version: 'v', 'x-info': 1 },
    host: 'h',
    schemes: ['https'],
    'x-doc': { a: 1 },
    paths: {
      'x-paths': true,
      '/p/{name}': {
        $ref: '#/r',
        parameters: [{ $ref: '#/parameters/x' }, { name: 'name', in: 'path', required: true, type: 'string' }],
        get: {
          tags: ['t'],
          deprecated: true,
          security: [{ BearerToken: ['s'] }],
          parameters: [
            { name: 'h', in: 'header', type: 'integer', maximum: 5, minimum: -1, default: 2, enum: [1, 2] },
            { name: 'f', in: 'formData', type: 'string', allowEmptyValue: true, multipleOf: 2, maxLength: 3, pattern: '^a' },
            { name: 'b', in: 'body', schema: { type: 'object' }, 'x-body': 'y' },
          ],
          responses: { '200': { description: 'OK', schema: { $ref: '#/definitions/S' }, 'x-r': 1 }, x: 'skipped' },
        },
      },
    },
    definitions: {
      S: {
        type: ['object', 'null'],
        allOf: [{ $ref: '#/definitions/T' }],
        additionalProperties: false,
        properties: { a: { type: 'array', items: [{ type: 'string' }], enum: [['x']], default: [], example: 'e', minItems: 1, maxItems: 2, uniqueItems: true, readOnly: true } },
        required: ['a'],
        discriminator: 'a',
        maxProperties: 4,
        minProperties: 1,
        multipleOf: 0.5,
        exclusiveMaximum: true,
        exclusiveMinimum: true,
        title: 'S',
      },
      T: { type: 'object', additionalProperties: { type: 'string' } },
    },
    security: [{ BearerToken: [] }],
    securityDefinitions: { BearerToken: { type: 'apiKey', name: 'authorization', in: 'header', 'x-k': 1 }, Basic: { type: 'basic' } },
  }
  const pb = openapiV2Protobuf(doc)
  t.same(strings(pb, 1), ['2.0'], 'swagger')
  t.same(strings(pb, 3), ['h'], 'host')
  t.same(strings(pb, 5), ['https'], 'schemes')
  const ext = strings(pb, 16)
  t.equal(ext.length, 1, 'the document\'s vendor extension')
  t.match(ext[0], 'x-doc')
  const defs = strings(Buffer.from(strings(pb, 9)[0]!, 'latin1'), 1).map((d) => strings(Buffer.from(d, 'latin1'), 1)[0])
  t.same(defs, ['S', 'T'])
  const yaml = (any: string) => YAML.parse(strings(Buffer.from(any, 'latin1'), 2)[0] ?? '') as unknown
  const s = Buffer.from(strings(Buffer.from(strings(Buffer.from(strings(pb, 9)[0]!, 'latin1'), 1)[0]!, 'latin1'), 2)[0]!, 'latin1')
  t.same(strings(Buffer.from(strings(s, 22)[0]!, 'latin1'), 1), ['object', 'null'], 'a list of types')
  t.same(strings(s, 19), ['a'], 'required')
  t.equal(strings(s, 24).length, 1, 'allOf')
  const a = Buffer.from(strings(Buffer.from(strings(Buffer.from(strings(s, 25)[0]!, 'latin1'), 1)[0]!, 'latin1'), 2)[0]!, 'latin1')
  t.same(yaml(strings(a, 20)[0]!), ['x'], 'enum values as YAML')
  t.same(yaml(strings(a, 5)[0]!), [], 'default')
  t.same(yaml(strings(a, 30)[0]!), 'e', 'example')
  t.equal(strings(a, 23).length, 1, 'items given as a list')
  const security = strings(Buffer.from(strings(pb, 13)[0]!, 'latin1'), 1)
  t.equal(security.length, 2, 'both security definitions named; the basic one left empty')
  t.equal(strings(pb, 12).length, 1, 'security requirements')
})
