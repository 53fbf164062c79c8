! Device arrays through the same calls: the simulation's arrays live on the device (OpenMP target data), and
! `use_device_addr` hands ktr their device addresses, which ktr reads in place. Built with -fopenmp; where the
! compiler offloads nothing (Debian's gfortran without an offload target) the "device" is the host and the same
! program runs there. With OpenACC the block is `!$acc host_data use_device(x, y)`.
!
!   device_arrays_f CONFIG
program device_arrays
  use ktr
  use, intrinsic :: iso_fortran_env, only: real32
  implicit none
  integer, parameter :: n = 256
  real(real32) :: x(4, n), y(1, n), pred(1, n), loss, first
  character(len=256) :: config
  integer :: istat, step, i

  call get_command_argument(1, config)
  istat = ktr_create_model("device", config, KTR_DEVICE_DEFAULT)
  if (istat == KTR_RESULT_NOT_SUPPORTED) istat = ktr_create_model("device", config, 0)
  if (istat /= KTR_RESULT_SUCCESS) error stop "ktr_create_model failed"

  !$omp target data map(alloc: x, y) map(from: pred)
  do step = 1, 300
    !$omp target teams distribute parallel do
    do i = 1, n
      x(:, i) = [sin(0.01 * (i + step)), cos(0.02 * i), 0.001 * step, 0.5]
      y(1, i) = x(1, i) * x(2, i) + x(3, i)
    end do
    !$omp target data use_device_addr(x, y)
    istat = ktr_train("device", x, y, loss)
    !$omp end target data
    if (istat /= KTR_RESULT_SUCCESS) then
      print *, ktr_last_error()
      error stop "ktr_train failed"
    end if
    if (step == 1) first = loss
  end do
  !$omp target data use_device_addr(x, pred)
  istat = ktr_inference("device", x, pred)
  !$omp end target data
  !$omp end target data
  if (istat /= KTR_RESULT_SUCCESS) error stop "ktr_inference failed"
  print '(a, es12.4, a, es12.4)', "loss ", first, " -> ", loss
  istat = ktr_finalize()
  if (.not. (loss < first / 10)) error stop "the surrogate did not learn"
end program device_arrays
