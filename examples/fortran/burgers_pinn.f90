! Raissi's viscous Burgers problem, physics-informed, from Fortran through ktr's split step: Adam, then L-BFGS from
! Adam's weights.
!
!   u_t + u u_x - nu u_xx = 0 on x in [-1, 1], t in [0, 1], nu = 0.01 / pi,
!   u(x, 0) = -sin(pi x), u(-1, t) = u(1, t) = 0.
!
! Each step: the interior points forward with spec "d1 d0 d0,0" (u_t, u_x, u_xx: derivs(3, 1, n)), the residual and
! its seeds here, back; the boundary and initial points forward with an empty spec, their seeds, back; one update.
! The reference is the Cole-Hopf solution,
!   u(x, t) = -int sin(pi (x - y)) f(x - y) g(y) dy / int f(x - y) g(y) dy,
!   f(z) = exp(-cos(pi z) / (2 pi nu)), g(y) = exp(-y^2 / (4 nu t)),
! integrated by the trapezoidal rule (1,201 nodes) over +-9 widths of g (spectrally accurate for this smooth, decaying
! integrand), with the largest exponent taken out. The program prints the relative L2 error on a 201 x 101 grid
! after each phase and fails if the last exceeds the bound on its command line.
!
!   burgers_pinn ADAM.yaml ADAM_STEPS LBFGS.yaml LBFGS_STEPS MAX_RELATIVE_L2
program burgers_pinn
  use ktr
  use, intrinsic :: iso_fortran_env, only: real32, real64
  implicit none
  integer, parameter :: nf = 2000, nb = 100, gx = 201, gt = 101
  real(real64), parameter :: pi = 3.14159265358979323846_real64, nu = 0.01_real64 / pi
  real(real32) :: xf(2, nf), uf(1, nf), df(3, 1, nf), uf_seed(1, nf), df_seed(3, 1, nf)
  real(real32) :: xb(2, nb), ub(1, nb), ub_target(nb), ub_seed(1, nb)
  real(real32) :: xg(2, gx * gt), ug(1, gx * gt)  ! the test grid: fixed arrays (an allocatable in the main program
  real(real64) :: exact(gx * gt)                  ! is never freed, which LeakSanitizer reports)
  character(len=512) :: adam_cfg, lbfgs_cfg, arg
  integer :: adam_steps, lbfgs_steps, i
  real(real64) :: bound, error

  if (command_argument_count() /= 5) then
    print '(a)', "usage: burgers_pinn ADAM.yaml ADAM_STEPS LBFGS.yaml LBFGS_STEPS MAX_RELATIVE_L2"
    error stop 2
  end if
  call get_command_argument(1, adam_cfg)
  call get_command_argument(2, arg)
  read (arg, *) adam_steps
  call get_command_argument(3, lbfgs_cfg)
  call get_command_argument(4, arg)
  read (arg, *) lbfgs_steps
  call get_command_argument(5, arg)
  read (arg, *) bound

  ! Interior points from the plastic number's additive recurrence; boundary and initial points on their edges.
  do i = 1, nf
    xf(1, i) = real(2 * modulo(0.5_real64 + 0.7548776662466927_real64 * i, 1.0_real64) - 1, real32)
    xf(2, i) = real(modulo(0.5_real64 + 0.5698402909980532_real64 * i, 1.0_real64), real32)
  end do
  do i = 1, nb / 2  ! initial: t = 0
    xb(1, i) = -1.0 + 2.0 * real(i - 1) / real(nb / 2 - 1)
    xb(2, i) = 0.0
    ub_target(i) = real(-sin(pi * xb(1, i)), real32)
  end do
  do i = nb / 2 + 1, nb  ! boundary: x = -1 and 1, alternately
    xb(1, i) = merge(-1.0, 1.0, mod(i, 2) == 0)
    xb(2, i) = real(i - nb / 2 - 1) / real(nb / 2 - 1)
    ub_target(i) = 0.0
  end do
  call reference_grid()

  call check(ktr_create_model("burgers", trim(adam_cfg), KTR_DEVICE_DEFAULT), "create (adam)")
  call train("burgers", adam_steps)
  error = relative_l2("burgers")
  print '(a, i0, a, es10.3)', "burgers_pinn: ", adam_steps, " Adam steps, relative L2 error ", error
  ! Adam's weights into a model whose optimiser is L-BFGS, through a weights file.
  call check(ktr_save_model("burgers", "burgers_adam.safetensors"), "save_model")
  call check(ktr_create_model("burgers_lbfgs", trim(lbfgs_cfg), KTR_DEVICE_DEFAULT), "create (lbfgs)")
  call check(ktr_load_model("burgers_lbfgs", "burgers_adam.safetensors"), "load_model")
  open (newunit=i, file="burgers_adam.safetensors")
  close (i, status="delete")
  call train("burgers_lbfgs", lbfgs_steps)
  error = relative_l2("burgers_lbfgs")
  print '(a, i0, a, es10.3, a, es8.1, a)', "burgers_pinn: then ", lbfgs_steps, " L-BFGS steps, relative L2 error ", &
    error, " (bound ", bound, ")"
  call check(ktr_destroy_model("burgers"), "destroy")
  call check(ktr_destroy_model("burgers_lbfgs"), "destroy")
  if (error > bound) error stop "the relative L2 error exceeds the bound"
  print '(a)', "burgers_pinn: ok"

contains

  ! `steps` updates of model `name`, the loss printed four times.
  subroutine train(name, steps)
    character(len=*), intent(in) :: name
    integer, intent(in) :: steps
    integer :: step, k
    real(real64) :: loss
    real(real32) :: r
    do step = 1, steps
      call check(ktr_jet_forward(name, "d1 d0 d0,0", xf, uf, df), "jet_forward (interior)")
      loss = 0
      do k = 1, nf  ! r = u_t + u u_x - nu u_xx
        r = df(1, 1, k) + uf(1, k) * df(2, 1, k) - real(nu, real32) * df(3, 1, k)
        loss = loss + real(r, real64)**2 / nf
        uf_seed(1, k) = 2 * r * df(2, 1, k) / nf
        df_seed(1, 1, k) = 2 * r / nf
        df_seed(2, 1, k) = 2 * r * uf(1, k) / nf
        df_seed(3, 1, k) = -2 * real(nu, real32) * r / nf
      end do
      call check(ktr_jet_backward(name, output_seed=uf_seed, derivs_seed=df_seed), "jet_backward (interior)")
      call check(ktr_jet_forward(name, "", xb, ub), "jet_forward (edges)")
      do k = 1, nb
        loss = loss + real(ub(1, k) - ub_target(k), real64)**2 / nb
        ub_seed(1, k) = 2 * (ub(1, k) - ub_target(k)) / nb
      end do
      call check(ktr_jet_backward(name, output_seed=ub_seed), "jet_backward (edges)")
      call check(ktr_apply_gradients(name, real(loss, real32)), "apply_gradients")
      if (mod(step, max(steps / 4, 1)) == 0 .or. step == steps) print '(a, a, i0, a, es10.3)', name, ": step ", step, &
        " loss ", loss
    end do
  end subroutine

  ! The Cole-Hopf solution on the gx x gt grid of [-1, 1] x [0, 1].
  subroutine reference_grid()
    integer, parameter :: nq = 1201
    integer :: a, b, q
    real(real64) :: x, t, w, y, e(nq), top, den, emax
    do b = 1, gt
      do a = 1, gx
        x = -1 + 2 * real(a - 1, real64) / (gx - 1)
        t = real(b - 1, real64) / (gt - 1)
        i = a + (b - 1) * gx
        xg(1, i) = real(x, real32)
        xg(2, i) = real(t, real32)
        if (t == 0) then
          exact(i) = -sin(pi * x)
          cycle
        end if
        w = sqrt(4 * nu * t)  ! g(y) = exp(-(y / w)^2)
        do q = 1, nq
          y = w * (-9 + 18 * real(q - 1, real64) / (nq - 1))
          e(q) = -cos(pi * (x - y)) / (2 * pi * nu) - (y / w)**2
        end do
        emax = maxval(e)
        top = 0
        den = 0
        do q = 1, nq
          y = w * (-9 + 18 * real(q - 1, real64) / (nq - 1))
          top = top - sin(pi * (x - y)) * exp(e(q) - emax)
          den = den + exp(e(q) - emax)
        end do
        exact(i) = top / den
      end do
    end do
  end subroutine

  ! The relative L2 error of model `name` against the reference on the grid.
  real(real64) function relative_l2(name)
    character(len=*), intent(in) :: name
    call check(ktr_inference(name, xg, ug), "inference")
    relative_l2 = sqrt(sum((real(ug(1, :), real64) - exact)**2) / sum(exact**2))
  end function

  subroutine check(istat, what)
    integer, intent(in) :: istat
    character(len=*), intent(in) :: what
    if (istat /= KTR_RESULT_SUCCESS) then
      print '(a, a, a)', what, ": ", ktr_last_error()
      error stop 1
    end if
  end subroutine
end program
