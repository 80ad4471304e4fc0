import t from 'tap'
import { crdStatus, defaultCRD, resourceTypesFromCRD, validateCRD } from '../operator/sandbox/crd.ts'
import { goFloat } from '../operator/sandbox/crd/schema.ts'
import type { KubeObject, ResourceType } from '../operator/sandbox/types.ts'
import { memcachedCRD } from './sandbox-crd-fixture.ts'

function typeOf(crd = memcachedCRD()): ResourceType {
  const [type] = resourceTypesFromCRD(crd)
  if (!type) throw new Error('no type')
  return type
}

function cr(spec: Record<string, unknown>, name = 'x'): KubeObject {
  return { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default' }, spec }
}

t.test('a CRD serves one resource type per served version with its names, subresources and columns', async (t) => {
  const crd = memcachedCRD()
  const spec = crd['spec'] as { versions: Record<string, unknown>[] }
  spec.versions.push({ name: 'v1beta1', served: false, storage: false, schema: { openAPIV3Schema: { type: 'object' } } })
  const types = resourceTypesFromCRD(crd)
  t.equal(types.length, 1)
  const type = types[0] as ResourceType
  t.match(type, { group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', singular: 'memcached', kind: 'Memcached', listKind: 'MemcachedList', namespaced: true, shortNames: ['mc'], custom: true })
  t.same(type.subresources, { status: true, scale: { specReplicasPath: '.spec.size', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } })
  t.same(type.printerColumns?.map((c) => c.name), ['Size', 'Ready', 'Age'])
  t.same(type.verbs, ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'])
  t.match(type.topology, { type: 'struct', fields: { spec: { type: 'struct', fields: { servers: { type: 'list', listType: 'map', keys: ['name'] }, tags: { type: 'list', listType: 'set' }, labels: { type: 'map' } } } } })
})

t.test('a version without printer columns gets the default Age column', async (t) => {
  const crd = memcachedCRD()
  const v = (crd['spec'] as { versions: Record<string, unknown>[] }).versions[0] as Record<string, unknown>
  delete v['additionalPrinterColumns']
  t.same(typeOf(crd).printerColumns?.map((c) => [c.name, c.type, c.jsonPath]), [['Age', 'date', '.metadata.creationTimestamp']])
})

t.test('pruning removes undeclared fields, keeps preserved subtrees and ObjectMeta, and reports paths', async (t) => {
  const type = typeOf()
  const o = cr({ size: 1, bogus: true, servers: [{ name: 'a', junk: 1 }], extra: { anything: { deep: 1 } }, template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', what: 1 }, spec: { a: 'x', b: 'y' } } })
  ;(o as Record<string, unknown>)['topLevel'] = 1
  ;(o.metadata as Record<string, unknown>)['nonsense'] = 'x'
  const pruned = type.prune?.(o)
  t.same(pruned, ['metadata.nonsense', 'spec.bogus', 'spec.servers[0].junk', 'spec.template.metadata.what', 'spec.template.spec.b', 'topLevel'])
  t.same(o['spec'], { size: 1, servers: [{ name: 'a' }], extra: { anything: { deep: 1 } }, template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { a: 'x' } } })
  t.notOk('topLevel' in o)
})

t.test('defaulting fills defaults top-down, replaces non-nullable nulls with defaults and drops the others', async (t) => {
  const type = typeOf()
  const o = cr({ size: 1, image: null, mode: null, note: null, servers: [{ name: 'a' }, { name: 'b', weight: 5 }] })
  type.default?.(o)
  t.same(o['spec'], { size: 1, image: 'memcached:1.6', note: null, servers: [{ name: 'a', weight: 1 }, { name: 'b', weight: 5 }], resources: { memory: '64Mi' } })
})

t.test('validation messages are the real server\'s', async (t) => {
  const type = typeOf()
  const v = (spec: Record<string, unknown>, name?: string) => type.validate?.(cr(spec, name))
  t.same(v({ size: 3 }), [])
  t.same(v({ size: -1 }), [{ reason: 'FieldValueInvalid', message: 'Invalid value: -1: spec.size in body should be greater than or equal to 0', field: 'spec.size' }])
  t.same(v({ size: 101 }), [{ reason: 'FieldValueInvalid', message: 'Invalid value: 101: spec.size in body should be less than or equal to 100', field: 'spec.size' }])
  t.same(v({ size: 'string' }), [{ reason: 'FieldValueTypeInvalid', message: 'Invalid value: "string": spec.size in body must be of type integer: "string"', field: 'spec.size' }])
  t.same(v({ size: 1.5 }), [{ reason: 'FieldValueTypeInvalid', message: 'Invalid value: "number": spec.size in body must be of type integer: "number"', field: 'spec.size' }])
  t.same(v({}), [{ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.size' }])
  t.same(v({ size: 1, mode: 'x' }), [{ reason: 'FieldValueNotSupported', message: 'Unsupported value: "x": supported values: "a", "b"', field: 'spec.mode' }])
  t.same(v({ size: 1, ratio: 0.5 }), [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0.5: spec.ratio in body should be greater than 0.5', field: 'spec.ratio' }])
  t.same(v({ size: 1, ratio: 2000000.5 }), [{ reason: 'FieldValueInvalid', message: 'Invalid value: 2.0000005e+06: spec.ratio in body should be less than or equal to 1e+06', field: 'spec.ratio' }])
  t.same(v({ size: 1, image: 'UPPER' }), [{ reason: 'FieldValueInvalid', message: "Invalid value: \"UPPER\": spec.image in body should match '^[a-z0-9.:/-]+$'", field: 'spec.image' }])
  t.same(v({ size: 1, image: '' }), [
    { reason: 'FieldValueInvalid', message: 'Invalid value: "": spec.image in body should be at least 1 chars long', field: 'spec.image' },
    { reason: 'FieldValueInvalid', message: "Invalid value: \"\": spec.image in body should match '^[a-z0-9.:/-]+$'", field: 'spec.image' },
  ])
  t.same(v({ size: 1, image: 'a'.repeat(21) }), [{ reason: 'FieldValueTooLong', message: 'Too long: may not be more than 20 bytes', field: 'spec.image' }])
  t.same(v({ size: 1, tags: ['a', 'b', 'c'] }), [{ reason: 'FieldValueTooMany', message: 'Too many: 3: must have at most 2 items', field: 'spec.tags' }])
  t.same(v({ size: 1, tags: [] }), [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0: spec.tags in body should have at least 1 items', field: 'spec.tags' }])
  t.same(v({ size: 1, tags: ['a', 'a'] }), [{ reason: 'FieldValueDuplicate', message: 'Duplicate value: "a"', field: 'spec.tags[1]' }])
  t.same(v({ size: 1, servers: [{ name: 'a' }, { name: 'a' }] }), [{ reason: 'FieldValueDuplicate', message: 'Duplicate value: map[string]interface {}{"name":"a"}', field: 'spec.servers[1]' }])
  t.same(v({ size: 1, servers: [{ weight: 1 }] }), [{ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.servers[0].name' }])
  t.same(v({ size: 1, port: 80 }), [])
  t.same(v({ size: 1, port: 'http' }), [])
  t.same(v({ size: 1, port: true }), [{ reason: 'FieldValueTypeInvalid', message: 'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"', field: 'spec.port' }])
  t.same(v({ size: 1, labels: { a: 1 } }), [{ reason: 'FieldValueTypeInvalid', message: 'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"', field: 'spec.labels.a' }])
  t.same(v({ size: 1, note: null }), [])
  t.same(v({ size: 1, mode: null }), [
    { reason: 'FieldValueTypeInvalid', message: 'Invalid value: "null": spec.mode in body must be of type string: "null"', field: 'spec.mode' },
    { reason: 'FieldValueNotSupported', message: 'Unsupported value: null: supported values: "a", "b"', field: 'spec.mode' },
  ])
  t.same(v({ size: 1, template: { metadata: { name: 'ok' } } }), [
    { reason: 'FieldValueRequired', message: 'Required value: must not be empty', field: 'spec.template.apiVersion' },
    { reason: 'FieldValueRequired', message: 'Required value: must not be empty', field: 'spec.template.kind' },
  ])
  t.match(v({ size: 1 }, 'Not_Valid'), [{ reason: 'FieldValueInvalid', field: 'metadata.name', message: /^Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of/ }])
  t.equal(v({ size: -1, mode: 'z' })?.length, 2, 'every error is reported')
})

t.test('anyOf, oneOf and not are reported the way apiextensions renders kube-openapi\'s plain errors', async (t) => {
  const schema = { type: 'object', properties: {
    q: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
    a: { type: 'string', anyOf: [{ maxLength: 2 }, { pattern: '^x' }] },
    o: { type: 'integer', oneOf: [{ minimum: 5 }, { maximum: 10 }] },
    n: { type: 'string', not: { enum: ['bad'] } },
  } }
  const crd = memcachedCRD()
  const v = (crd['spec'] as { versions: Record<string, any>[] }).versions[0] as Record<string, any>
  v['schema'] = { openAPIV3Schema: { type: 'object', properties: { spec: schema } } }
  delete v['additionalPrinterColumns']
  const type = typeOf(crd)
  const check = (spec: Record<string, unknown>) => type.validate?.(cr(spec)).map((c) => `${c.field}: ${c.message}`)
  t.same(check({ q: 1, a: 'ab', o: 12, n: 'ok' }), [])
  t.same(check({ q: 'x', a: 'xyz' }), [])
  t.same(check({ a: 'abc' }), ['<nil>: Invalid value: "": "spec.a" must validate at least one schema (anyOf)', 'spec.a: Too long: may not be more than 2 bytes'], 'on a tie, the first alternative\'s errors')
  t.same(check({ o: 7 }), ['<nil>: Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found 2 valid alternatives'])
  t.same(check({ n: 'bad' }), ['<nil>: Invalid value: "": "spec.n" must not validate the schema (not)'])
})

t.test('multipleOf, property counts, formats and structured enums', async (t) => {
  const crd = memcachedCRD()
  const v = (crd['spec'] as { versions: Record<string, any>[] }).versions[0] as Record<string, any>
  v['schema'] = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: {
    m: { type: 'number', multipleOf: 0.5 },
    p: { type: 'object', minProperties: 1, maxProperties: 2, additionalProperties: { type: 'string' } },
    when: { type: 'string', format: 'date-time' },
    id: { type: 'string', format: 'uuid' },
    ip: { type: 'string', format: 'ipv4' },
    pair: { type: 'array', items: { type: 'integer' }, enum: [[1, 2], [3, 4]] },
    obj: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, enum: [{ a: 1 }] },
  } } } } }
  const type = typeOf(crd)
  const check = (spec: Record<string, unknown>) => type.validate?.(cr(spec)).map((c) => `${c.field}: ${c.message}`)
  t.same(check({ m: 1.5, p: { a: 'x' }, when: '2024-01-02T03:04:05Z', id: '123e4567-e89b-12d3-a456-426614174000', ip: '10.0.0.1', pair: [3, 4], obj: { a: 1 } }), [])
  t.same(check({ m: 1.2 }), ['spec.m: Invalid value: 1.2: spec.m in body should be a multiple of 0.5'])
  t.same(check({ p: {} }), ['spec.p: Invalid value: 0: spec.p in body should have at least 1 properties'])
  t.same(check({ p: { a: 'x', b: 'y', c: 'z' } }), ['spec.p: Too many: 3: must have at most 2 items'])
  t.same(check({ when: 'yesterday', id: 'nope', ip: '300.1.1.1' }), [
    'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
    'spec.id: Invalid value: "nope": spec.id in body must be of type uuid: "nope"',
    'spec.ip: Invalid value: "300.1.1.1": spec.ip in body must be of type ipv4: "300.1.1.1"',
  ])
  t.same(check({ pair: [2, 1], obj: { a: 2 } }), [
    'spec.pair: Unsupported value: []interface {}{2, 1}: supported values: "[1,2]", "[3,4]"',
    'spec.obj: Unsupported value: map[string]interface {}{"a":2}: supported values: "{\\"a\\":1}"',
  ])
})

t.test('Go float formatting matches %v', async (t) => {
  t.equal(goFloat(0), '0')
  t.equal(goFloat(0.5), '0.5')
  t.equal(goFloat(123456), '123456')
  t.equal(goFloat(1e6), '1e+06')
  t.equal(goFloat(1234567.5), '1.2345675e+06')
  t.equal(goFloat(0.00001), '1e-05')
  t.equal(goFloat(-2.5), '-2.5')
})

t.test('a valid CRD passes validation; a malformed one is refused with causes', async (t) => {
  t.same(validateCRD(memcachedCRD()), [])
  const bad = memcachedCRD()
  bad.metadata.name = 'wrong'
  const spec = bad['spec'] as Record<string, unknown>
  spec['group'] = 'nodots'
  spec['scope'] = 'Galaxy'
  spec['versions'] = [
    { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { properties: { a: { type: 'array' } } }, metadata: { type: 'object', properties: { labels: { type: 'object' } } } } } } },
    { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } }, additionalPrinterColumns: [{ name: 'X', type: 'float', jsonPath: '.x' }], subresources: { scale: { specReplicasPath: 'spec.x', statusReplicasPath: '.status.y' } } },
    { name: 'v2', served: true, storage: false },
  ]
  const fields = validateCRD(bad).map((c) => `${c.field}: ${c.message}`)
  t.same(fields, [
    'spec.group: Invalid value: "nodots": should be a domain with at least one dot',
    'metadata.name: Invalid value: "wrong": must be spec.names.plural+"."+spec.group',
    'spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"',
    'spec.versions: Invalid value: []interface {}{"v1", "v1", "v2"}: must have exactly one version marked as storage version',
    'spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields',
    'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].items: Required value: must be specified',
    'spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified',
    'spec.versions[1].name: Duplicate value: "v1"',
    'spec.versions[1].additionalPrinterColumns[0].type: Unsupported value: "float": supported values: "integer", "number", "string", "boolean", "date"',
    'spec.versions[1].subresources.scale.specReplicasPath: Invalid value: "spec.x": should be a json path under .spec',
    'spec.versions[2].schema.openAPIV3Schema: Required value: schemas are required',
  ])
  t.same(validateCRD({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'x' }, spec: {} }).map((c) => c.field).slice(0, 4), ['spec.group', 'spec.names.plural', 'spec.names.kind', 'metadata.name'])
})

t.test('structural schema rules and names are enforced', async (t) => {
  const crd = memcachedCRD()
  const spec = crd['spec'] as Record<string, any>
  spec['names'] = { plural: 'Memcacheds', singular: 'Memcached', kind: 'Memcached', listKind: 'Memcached' }
  crd.metadata.name = 'Memcacheds.cache.example.com'
  spec['versions'] = [
    { name: 'V1', served: true, storage: true, subresources: { scale: { specReplicasPath: '.spec.size', statusReplicasPath: 'status.r', labelSelectorPath: 'selector' } }, schema: { openAPIV3Schema: { type: 'object', properties: {
      a: { type: 'object', properties: { x: { type: 'string' } }, additionalProperties: { type: 'string' } },
      b: { type: 'array', items: { type: 'object', properties: { k: { type: 'string' } } }, 'x-kubernetes-list-type': 'map' },
      c: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-map-keys': ['k'] },
      d: { type: 'string', pattern: '([' },
      e: { type: 'float' },
      f: { type: 'object', additionalProperties: { type: 'array' } },
      g: { 'x-kubernetes-int-or-string': true },
      h: { 'x-kubernetes-preserve-unknown-fields': true },
    } } } },
    { name: 'v2', served: true, storage: false, schema: { openAPIV3Schema: { type: 'string' } }, additionalPrinterColumns: [{}] },
    { name: 'v3', served: true, storage: false, schema: { openAPIV3Schema: { properties: {} } } },
  ]
  t.same(validateCRD(crd).map((c) => `${c.field}: ${c.message}`), [
    "spec.names.plural: Invalid value: \"Memcacheds\": a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
    "spec.names.singular: Invalid value: \"Memcached\": a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
    'spec.names.listKind: Invalid value: "Memcached": kind and listKind may not be the same',
    "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
    'spec.versions[0].schema.openAPIV3Schema.properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive',
    'spec.versions[0].schema.openAPIV3Schema.properties[b].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map',
    'spec.versions[0].schema.openAPIV3Schema.properties[c].x-kubernetes-list-map-keys: Forbidden: must not be set if x-kubernetes-list-type is not map',
    'spec.versions[0].schema.openAPIV3Schema.properties[d].pattern: Invalid value: "([": must be a valid regular expression',
    'spec.versions[0].schema.openAPIV3Schema.properties[e].type: Unsupported value: "float": supported values: "array", "boolean", "integer", "number", "object", "string"',
    'spec.versions[0].schema.openAPIV3Schema.properties[f].additionalProperties.items: Required value: must be specified',
    'spec.versions[0].subresources.scale.statusReplicasPath: Invalid value: "status.r": should be a json path under .status',
    'spec.versions[0].subresources.scale.labelSelectorPath: Invalid value: "selector": should be a json path under either .spec or .status',
    'spec.versions[1].schema.openAPIV3Schema.type: Invalid value: "string": must be object at the root',
    'spec.versions[1].additionalPrinterColumns[0].name: Required value',
    'spec.versions[1].additionalPrinterColumns[0].type: Required value',
    'spec.versions[1].additionalPrinterColumns[0].jsonPath: Required value',
    'spec.versions[2].schema.openAPIV3Schema.type: Required value: must not be empty at the root',
  ])
  const scaleless = memcachedCRD()
  const sv = (scaleless['spec'] as Record<string, any>).versions[0]
  sv.subresources = { scale: {} }
  t.same(validateCRD(scaleless).map((c) => c.field), ['spec.versions[0].subresources.scale.specReplicasPath', 'spec.versions[0].subresources.scale.statusReplicasPath'])
})

t.test('CRD defaults and status conditions', async (t) => {
  const crd = memcachedCRD()
  const names = (crd['spec'] as { names: Record<string, unknown> }).names
  delete names['singular']
  delete names['listKind']
  defaultCRD(crd)
  t.match(crd['spec'], { names: { singular: 'memcached', listKind: 'MemcachedList' }, conversion: { strategy: 'None' } })
  const status = crdStatus(crd, [])
  t.match(status, {
    conditions: [
      { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' },
      { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
    ],
    acceptedNames: { plural: 'memcacheds', singular: 'memcached', shortNames: ['mc'], kind: 'Memcached', listKind: 'MemcachedList' },
    storedVersions: ['v1alpha1'],
  })
  t.same(Object.keys(status['acceptedNames'] as object), ['plural', 'singular', 'shortNames', 'kind', 'listKind'])
  crd['status'] = { ...status, conditions: (status['conditions'] as Record<string, unknown>[]).map((c) => ({ ...c, lastTransitionTime: '2020-01-01T00:00:00Z' })), storedVersions: ['v1beta1'] }
  const again = crdStatus(crd, [])
  t.equal((again['conditions'] as { lastTransitionTime: string }[])[0]?.lastTransitionTime, '2020-01-01T00:00:00Z', 'transition time kept')
  t.same(again['storedVersions'], ['v1beta1', 'v1alpha1'])
  delete crd['status']
  t.match(crdStatus(crd, ['"memcacheds" is already in use']), {
    conditions: [{ type: 'NamesAccepted', status: 'False', reason: 'PluralConflict', message: '"memcacheds" is already in use' }, { type: 'Established', status: 'False', reason: 'NotAccepted' }],
  })
})
