/**
 * The CustomResourceDefinition of chartrevisions.cache.example.com: a chart as an immutable,
 * content-addressed, cluster-scoped object (chart-revision.ts; docs/fleet.md). Its schema is
 * fixed (it does not depend on the chart); `memcached-operator crd --kind ChartRevision` prints it.
 */
import { crdOf } from './crd-envelope.ts'
import { DEFAULT_LABEL, REVISION_KIND, REVISION_PLURAL } from './chart-revision.ts'

const label = (key: string): string => `.metadata.labels['${key}']`

/** The CRD object. */
export function chartRevisionCRD(): Record<string, unknown> {
  return crdOf({ kind: REVISION_KIND, plural: REVISION_PLURAL, singular: 'chartrevision', shortNames: ['chartrev'] }, 'Cluster', {
    additionalPrinterColumns: [
      { name: 'Chart', type: 'string', jsonPath: '.spec.chart', description: 'The chart (Chart.yaml name)' },
      { name: 'Version', type: 'string', jsonPath: '.spec.version', description: 'The chart\'s version (Chart.yaml)' },
      { name: 'Default', type: 'string', jsonPath: label(DEFAULT_LABEL), description: 'true on the revision that Memcacheds without a pin run' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    schema: {
      openAPIV3Schema: {
        type: 'object',
        description: `${REVISION_KIND} holds one revision of a chart, named <chart>-<first 12 hex digits of its digest>: immutable, content-addressed; made by \`memcached-operator chart push\` (docs/fleet.md).`,
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { type: 'object' },
          spec: {
            type: 'object',
            required: ['chart', 'version', 'digest', 'files'],
            // Immutable: the operator also refuses a revision whose files no longer hash to its name.
            'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'a ChartRevision is immutable: push the chart again as a new revision' }],
            properties: {
              chart: { type: 'string', description: 'The chart\'s name (Chart.yaml).' },
              version: { type: 'string', description: 'The chart\'s version (Chart.yaml).' },
              digest: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$', description: 'sha256 of the files (render/chart.ts chartDigest).' },
              files: {
                type: 'object',
                description: 'Each file of the chart (Chart.yaml, values.yaml, values.schema.json, kinds.yaml, templates/*.ejs, platforms/*.yaml) by its path in the chart, as text.',
                additionalProperties: { type: 'string' },
              },
            },
          },
        },
        required: ['spec'],
      },
    },
  })
}


