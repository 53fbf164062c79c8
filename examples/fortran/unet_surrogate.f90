! A Fortran simulation that trains a field-to-field surrogate in situ: a U-Net, through ktr's Fortran module.
!
! The simulation: u_t = D lap(u) - (a, b) . grad(u) on a periodic 16 x 16 grid, explicit, ns simulations at once.
! The surrogate learns to jump two solver steps: u(t + 2 dt) ~ U-Net(u(t)). Each field is a plain Fortran array
! u(1, 16, 16, ns), channel first and the sample LAST, which is the model's (N, H, W, C) seen from C. Every solver
! step hands ktr the pairs (ktr_push: the replay buffer on the device); every four steps the U-Net takes 8
! optimiser steps drawn from it (ktr_train_steps, one dispatch). Afterwards it predicts held-out simulations
! (other initial fields) into a rank-4 array (ktr_inference) and compares its mean squared error with
! persistence (predicting that the field does not change): the program stops with an error unless it is at least
! 5x lower.
!
!   unet_surrogate_f unet.yaml
program unet_surrogate
  use ktr
  use, intrinsic :: iso_fortran_env, only: real32, real64
  implicit none
  integer, parameter :: g = 16, ns = 32, steps = 48, campaigns = 8, held_out = 4
  real(real32) :: u(1, g, g, ns), x(1, g, g, ns), pred(1, g, g, ns), loss
  character(len=256) :: config
  integer :: istat, c, t
  real(real64) :: se, sp

  call get_command_argument(1, config)
  if (len_trim(config) == 0) config = "unet.yaml"
  istat = ktr_create_model("unet", config, KTR_DEVICE_DEFAULT)
  if (istat == KTR_RESULT_NOT_SUPPORTED) istat = ktr_create_model("unet", config, 0)
  call check(istat, "ktr_create_model")

  loss = 0
  do c = 0, campaigns - 1
    call initial(c, u)
    do t = 1, steps
      x = u
      call advance(u)
      call advance(u)
      call check(ktr_push("unet", x, u), "ktr_push")
      if (mod(t, 4) == 0) call check(ktr_train_steps("unet", 8, loss), "ktr_train_steps")
    end do
    if (mod(c, 2) == 1) print '(a, i0, a, es12.5)', "campaign ", c, ": loss ", loss
  end do

  se = 0
  sp = 0
  do c = 0, held_out - 1
    call initial(1000 + c, u)
    do t = 1, steps / 2
      x = u
      call advance(u)
      call advance(u)
      call check(ktr_inference("unet", x, pred), "ktr_inference")
      se = se + sum((real(pred, real64) - u)**2)
      sp = sp + sum((real(x, real64) - u)**2)
    end do
  end do
  se = se / (size(u) * held_out * (steps / 2))
  sp = sp / (size(u) * held_out * (steps / 2))
  print '(a, es11.4, a, es11.4, a, f6.1, a)', "held out: U-Net MSE ", se, ", persistence MSE ", sp, " (", sp / se, &
      "x lower)"
  call check(ktr_finalize(), "ktr_finalize")
  if (se * 5 > sp) error stop "the U-Net is not 5x better than persistence"

contains

  subroutine check(istat, what)
    integer, intent(in) :: istat
    character(len=*), intent(in) :: what
    if (istat /= KTR_RESULT_SUCCESS) then
      print '(a, a, a, i0, a, a)', "unet_surrogate: ", what, " failed (", istat, "): ", ktr_last_error()
      error stop 1
    end if
  end subroutine

  ! Campaign c's initial fields: three periodic Fourier modes each, amplitudes, wave numbers and phases from a
  ! deterministic sequence (the same on every compiler).
  subroutine initial(c, u)
    integer, intent(in) :: c
    real(real32), intent(out) :: u(1, g, g, ns)
    real(real32), parameter :: tau = 6.2831853
    integer :: s, m, i, j, h
    real(real32) :: amp, ki, kj, phase
    u = 0
    do s = 1, ns
      do m = 1, 3
        h = 7919 * c + 104729 * s + 1299709 * m
        amp = 0.5 * (modulo(h, 1000) / 500.0 - 1)
        ki = real(modulo(h / 7, 4))
        kj = real(1 + modulo(h / 11, 3))
        phase = tau * modulo(h / 13, 1000) / 1000.0
        do j = 1, g
          do i = 1, g
            u(1, i, j, s) = u(1, i, j, s) + amp * sin(tau * (ki * (i - 1) + kj * (j - 1)) / g + phase)
          end do
        end do
      end do
    end do
  end subroutine

  ! One explicit step, periodic: diffusion (D dt / dx^2 = 0.1) and central-difference advection (0.3, 0.2).
  subroutine advance(u)
    real(real32), intent(inout) :: u(1, g, g, ns)
    real(real32), parameter :: d = 0.1, a = 0.3, b = 0.2
    real(real32) :: v(g, g)
    integer :: s, i, j, ip, im, jp, jm
    do s = 1, ns
      do j = 1, g
        jp = modulo(j, g) + 1
        jm = modulo(j - 2, g) + 1
        do i = 1, g
          ip = modulo(i, g) + 1
          im = modulo(i - 2, g) + 1
          v(i, j) = u(1, i, j, s) + d * (u(1, ip, j, s) + u(1, im, j, s) + u(1, i, jp, s) + u(1, i, jm, s) - &
                                         4 * u(1, i, j, s)) - 0.5 * a * (u(1, ip, j, s) - u(1, im, j, s)) - &
                    0.5 * b * (u(1, i, jp, s) - u(1, i, jm, s))
        end do
      end do
      u(1, :, :, s) = v
    end do
  end subroutine

end program unet_surrogate
