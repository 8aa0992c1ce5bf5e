export { importView } from "./import-view.ts";
export { priceProblem } from "./price.ts";
export {
  CSV_COLUMNS,
  type FileProblem,
  type FileProduct,
  formatOf,
  type ProductFile,
  type ProductFileFormat,
  parseProductFile,
} from "./product-file.ts";
export {
  createProductImportProcessor,
  PRODUCT_IMPORT_JOB,
  type ProductImportJobData,
  type ProductImportProcessorDeps,
  ProductImportQueue,
  productImportJobId,
} from "./product-import-queue.ts";
export {
  bodyDigest,
  callAtBulkPriority,
  ImportBusyError,
  ImportInterruptedError,
  type ImportOptions,
  type ImportSummary,
  type ImportTarget,
  type PreparedImport,
  ProductImporter,
  type ProductImporterDeps,
  type RunOutcome,
  type RunRow,
} from "./product-importer.ts";
export {
  type CatalogProduct,
  type ImportRecord,
  type ImportRow,
  type ImportStatus,
  ProductImportRepository,
  type ProductSpace,
} from "./repository.ts";
