! The module's version constants (generated from project()) against the library's ktr_version(): prints
! "ktr X.Y.Z" when they agree, and stops with status 1 naming both otherwise.
program fortran_version
  use ktr
  implicit none
  character(len=32) :: parts
  write (parts, '(i0,".",i0,".",i0)') KTR_VERSION_MAJOR, KTR_VERSION_MINOR, KTR_VERSION_PATCH
  if (KTR_VERSION_STRING /= ktr_version() .or. trim(parts) /= KTR_VERSION_STRING) then
    print '(5a)', "module ", KTR_VERSION_STRING, " (", trim(parts), "), library " // ktr_version()
    stop 1
  end if
  print '(2a)', "ktr ", KTR_VERSION_STRING
end program
