export {
  type ListOptions,
  type PageRequest,
  type RegistrationFilters,
  type RegistrationPage,
  RegistrationReader,
  type RegistrationReaderDeps,
  RegistrationsUnavailableError,
} from "./registration-reader.ts";
export {
  REGISTRATION_CSV_COLUMNS,
  registrationCsvHeader,
  registrationCsvRow,
  registrationRow,
} from "./registration-view.ts";
