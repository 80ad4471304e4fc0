import type { KubeObject } from '../operator/sandbox/types.ts'

/** A CRD in the shape of the project's Memcached CRD, with a few extra fields to exercise the schema. */
export function memcachedCRD(): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'memcacheds.cache.example.com' },
    spec: {
      group: 'cache.example.com',
      names: { plural: 'memcacheds', singular: 'memcached', kind: 'Memcached', listKind: 'MemcachedList', shortNames: ['mc'] },
      scope: 'Namespaced',
      versions: [{
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {}, scale: { specReplicasPath: '.spec.size', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } },
        additionalPrinterColumns: [
          { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
          { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                required: ['size'],
                properties: {
                  size: { type: 'integer', minimum: 0, maximum: 100 },
                  image: { type: 'string', default: 'memcached:1.6', minLength: 1, maxLength: 20, pattern: '^[a-z0-9.:/-]+$' },
                  ratio: { type: 'number', exclusiveMinimum: true, minimum: 0.5, maximum: 1000000 },
                  mode: { type: 'string', enum: ['a', 'b'] },
                  port: { 'x-kubernetes-int-or-string': true },
                  tags: { type: 'array', maxItems: 2, minItems: 1, items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
                  servers: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, weight: { type: 'integer', default: 1 } } } },
                  resources: { type: 'object', default: {}, properties: { memory: { type: 'string', default: '64Mi' } } },
                  labels: { type: 'object', additionalProperties: { type: 'string' } },
                  extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  note: { type: 'string', nullable: true },
                  template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } },
                },
              },
              status: { type: 'object', properties: { replicas: { type: 'integer' }, readyReplicas: { type: 'integer' }, selector: { type: 'string' } } },
            },
          },
        },
      }],
    },
  }
}
