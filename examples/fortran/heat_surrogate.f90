! A Fortran simulation that trains its surrogate in situ through ktr's Fortran module.
!
! The simulation: u_t = D u_xx + r u (1 - u) on a periodic 1-D grid, explicit Euler. Every time step hands ktr
! the samples x(:, i) = (u(i-1), u(i), u(i+1)) -> y(1, i) = u_new(i), plain Fortran arrays whose LAST dimension
! is the sample:
!   mode "train": one optimiser step per time step (ktr_train), and every other time step one more on the array
!                 section x(:, 1:n:2) (read through its stride, no copy);
!   mode "push":  the samples go to ktr's replay buffer on the device (ktr_push); every 8 time steps the
!                 surrogate takes 16 steps drawn from it (ktr_train_steps).
! Afterwards it predicts a fresh simulation's steps (ktr_inference) and compares its RMS error with predicting the
! mean: the program stops with an error unless it is at least 5x better.
!
!   heat_surrogate_f heat.yaml train|push
program heat_surrogate
  use ktr
  use, intrinsic :: iso_fortran_env, only: real32, real64
  implicit none
  integer, parameter :: n = 128, steps = 96, campaigns = 16
  real(real32) :: u(n), x(3, n), y(1, n), pred(1, n), half(1, n / 2), loss
  character(len=256) :: config, mode
  integer :: istat, c, t
  real(real64) :: se, sm, m

  call get_command_argument(1, config)
  call get_command_argument(2, mode)
  if (len_trim(config) == 0) config = "heat.yaml"
  if (len_trim(mode) == 0) mode = "train"

  ! A host-only ktr runs on the CPU; a GPU build on GPU 0.
  istat = ktr_create_model("heat", config, KTR_DEVICE_DEFAULT)
  if (istat == KTR_RESULT_NOT_SUPPORTED) istat = ktr_create_model("heat", config, 0)
  call check(istat, "ktr_create_model")

  loss = 0
  do c = 0, campaigns - 1
    call initial(c, u)
    do t = 1, steps
      call advance(u, x, y)
      if (trim(mode) == "push") then
        call check(ktr_push("heat", x, y), "ktr_push")
        if (mod(t, 8) == 0) call check(ktr_train_steps("heat", 16, loss), "ktr_train_steps")
      else
        call check(ktr_train("heat", x, y, loss), "ktr_train")
        if (mod(t, 2) == 0) &  ! and every other time step, the odd points once more: a section, read in place
          call check(ktr_train("heat", x(:, 1:n:2), y(:, 1:n:2), loss), "ktr_train (a strided section)")
      end if
    end do
    print '(a, i0, a, es15.8)', "campaign ", c, ": loss ", loss
  end do

  se = 0
  sm = 0
  call initial(campaigns + 7, u)
  do t = 1, steps
    call advance(u, x, y)
    call check(ktr_inference("heat", x, pred), "ktr_inference")
    m = sum(real(y(1, :), real64)) / n
    se = se + sum((real(pred(1, :), real64) - y(1, :))**2)
    sm = sm + sum((m - y(1, :))**2)
  end do
  se = sqrt(se / (n * steps))
  sm = sqrt(sm / (n * steps))
  print '(a, f9.6, a, f9.6, a, f6.1, a)', "held out: surrogate RMS ", se, ", predicting the mean ", sm, " (", &
      sm / se, "x better)"
  ! Sections in, sections out: the odd points' predictions, read and written through strides, equal theirs in
  ! the whole batch's predictions (up to the rounding of a product of another batch size).
  call check(ktr_inference("heat", x(:, 1:n:2), half), "ktr_inference (a section as input)")
  if (any(abs(half(1, :) - pred(1, 1:n:2)) > 1e-5 * (1 + abs(half(1, :))))) &
      error stop "a strided input section was read wrong"
  pred = -1
  call check(ktr_inference("heat", x(:, 1:n:2), pred(:, 2:n:2)), "ktr_inference (a section as output)")
  if (any(pred(1, 2:n:2) /= half(1, :)) .or. any(pred(1, 1:n:2) /= -1)) &
      error stop "a strided output section was written wrong"
  call check(ktr_finalize(), "ktr_finalize")
  if (se * 5 > sm) error stop "the surrogate is not 5x better than predicting the mean"

contains

  subroutine check(istat, what)
    integer, intent(in) :: istat
    character(len=*), intent(in) :: what
    if (istat /= KTR_RESULT_SUCCESS) then
      print '(a, a, a, i0, a, a)', "heat_surrogate: ", what, " failed (", istat, "): ", ktr_last_error()
      error stop 1
    end if
  end subroutine

  ! A deterministic initial condition for campaign c: a few smooth bumps in [0, 1].
  subroutine initial(c, u)
    integer, intent(in) :: c
    real(real32), intent(out) :: u(n)
    integer :: i, j
    real(real32) :: a(3), k(3), p(3)
    do j = 1, 3
      a(j) = 0.15 + 0.1 * modulo(37 * c + 11 * j, 100) / 100.0
      k(j) = real(1 + modulo(c + 2 * j, 4))
      p(j) = 6.2831853 * modulo(53 * c + 29 * j, 100) / 100.0
    end do
    do i = 1, n
      u(i) = max(0.0, 0.3 + sum(a * sin(k * 6.2831853 * (i - 1) / n + p)))
    end do
  end subroutine

  subroutine advance(u, x, y)
    real(real32), intent(inout) :: u(n)
    real(real32), intent(out) :: x(3, n), y(1, n)
    real(real32), parameter :: d = 0.2, r = 0.5
    real(real32) :: next(n)
    integer :: i
    do i = 1, n
      x(:, i) = [u(modulo(i - 2, n) + 1), u(i), u(modulo(i, n) + 1)]
      next(i) = u(i) + d * (x(1, i) - 2 * u(i) + x(3, i)) + r * u(i) * (1 - u(i)) * 0.1
    end do
    y(1, :) = next
    u = next
  end subroutine

end program heat_surrogate
